// One headless Chromium per process, driven over the DevTools protocol (CDP) through a pipe: the
// WebGPU device (webgpu_device.cpp) runs its kernels in a page of it. Chromium's start (about half a
// second, more for the WebGPU adapter) is paid once, when the device is first opened; the browser
// closes when the process exits (and dies with it, should the process be killed).
//
// The pipe is Chromium's --remote-debugging-pipe: it reads commands on its fd 3 and writes replies
// and events on its fd 4, each message one JSON object followed by a NUL byte. The device uses only
// Runtime.evaluate past the start, with awaitPromise, one command at a time; tests of exported pages
// (tests/test_webgpu_export.cpp) start a Chromium of their own and also navigate it and take
// screenshots.
#pragma once

#include <memory>
#include <mutex>
#include <string>

namespace lazygrad::webgpu {

// The Chromium binary to start: LAZYGRAD_CHROMIUM, else the first of chromium, chromium-browser,
// google-chrome on PATH; "" when there is none.
std::string find_chromium();

class Chromium {
 public:
  // Starts the browser on a blank local page (a file in a fresh temporary profile folder; nothing
  // is fetched from the network). Error, with the browser's last words, when it does not come up.
  explicit Chromium(const std::string& binary);
  ~Chromium();  // closes the browser and removes the profile folder
  Chromium(const Chromium&) = delete;
  Chromium& operator=(const Chromium&) = delete;

  // The value of a JavaScript expression in the page, awaited if it is a promise, as the JSON text
  // of the value (JSON.stringify's). A thrown exception (or a rejected promise) is an Error with its
  // message. Thread-safe: commands go one at a time.
  std::string evaluate(const std::string& expression);

  // A DevTools command to the page (Page.captureScreenshot, Emulation.setDeviceMetricsOverride,
  // ...): the reply's JSON text, whose "result" is the command's. Error with the browser's message
  // when it fails. For tests that drive a page (an exported model's, docs/webgpu.md).
  std::string page_command(const std::string& method, const std::string& params_json);
  // Loads url in the page and waits until it has loaded (document.readyState "complete").
  void navigate(const std::string& url);

  const std::string& version() const { return version_; }  // "HeadlessChrome/156.0.8078.114"

 private:
  void attach();
  void shutdown();
  std::string command(const std::string& method, const std::string& params_json, bool in_page);
  void send_message(const std::string& text);
  std::string receive_message(double timeout_s);
  [[noreturn]] void fail(const std::string& what);
  std::string last_words() const;  // the end of the browser's stderr, for errors

  std::mutex mu_;
  int to_browser_ = -1, from_browser_ = -1;
  int pid_ = -1;
  std::string profile_dir_, session_id_, version_, inbox_;
  long next_id_ = 1;
  bool dead_ = false;
};

// The process's browser, started on first use and closed at exit.
Chromium& browser();

}  // namespace lazygrad::webgpu
