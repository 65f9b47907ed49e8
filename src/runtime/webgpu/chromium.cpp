// Headless Chromium over the DevTools pipe (chromium.h).
#include "runtime/webgpu/chromium.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "debug.h"
#include "lazygrad/error.h"
#include "lazygrad/json.h"

namespace lazygrad::webgpu {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Seconds one command may take before the browser counts as hung: a kernel on a software adapter
// can run for minutes on a large input (LAZYGRAD_WEBGPU_TIMEOUT).
double command_timeout() {
  const std::string v = env("LAZYGRAD_WEBGPU_TIMEOUT");
  const double s = v.empty() ? 0 : std::atof(v.c_str());
  return s > 0 ? s : 600;
}

std::string sys_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// A descriptor numbered 10 or more, close-on-exec: the child's dup2 onto 3 and 4 then never meets
// one of them already sitting there.
int high_fd(int fd) {
  if (fd < 0) throw Error(sys_error("WEBGPU: open"));
  int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  if (h < 0) throw Error(sys_error("WEBGPU: fcntl"));
  return h;
}

}  // namespace

std::string find_chromium() {
  if (std::string b = env("LAZYGRAD_CHROMIUM"); !b.empty()) return access(b.c_str(), X_OK) == 0 ? b : "";
  const std::string path = env("PATH").empty() ? "/usr/local/bin:/usr/bin:/bin" : env("PATH");
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    size_t start = 0;
    while (start <= path.size()) {
      size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      const std::string candidate = path.substr(start, end - start) + "/" + name;
      if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate;
      start = end + 1;
    }
  }
  return "";
}

Chromium::Chromium(const std::string& binary) {
  char tmpl[] = "/tmp/lazygrad-webgpu-XXXXXX";
  if (!mkdtemp(tmpl)) throw Error(sys_error("WEBGPU: mkdtemp"));
  profile_dir_ = tmpl;
  const std::string page = profile_dir_ + "/lazygrad.html";
  std::ofstream(page) << "<!doctype html><title>lazygrad</title>\n";
  // Socket pairs rather than pipes: a write to a browser that died fails (MSG_NOSIGNAL) instead of
  // killing the process with SIGPIPE.
  int cmd[2], reply[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cmd) != 0 ||
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, reply) != 0)
    throw Error(sys_error("WEBGPU: socketpair"));
  const int child_in = high_fd(cmd[1]), child_out = high_fd(reply[1]);
  to_browser_ = cmd[0];
  from_browser_ = reply[0];
  // The flags that give a WebGPU adapter in headless Chromium without a GPU (SwiftShader, over
  // Vulkan); ones that keep it from reaching the network; a profile of its own.
  std::vector<std::string> args = {binary,
                                   "--headless=new",
                                   "--no-sandbox",
                                   "--enable-unsafe-webgpu",
                                   "--enable-features=Vulkan",
                                   "--use-webgpu-adapter=swiftshader",
                                   "--enable-unsafe-swiftshader",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--disable-default-apps",
                                   "--disable-extensions",
                                   "--no-first-run",
                                   "--no-default-browser-check",
                                   "--user-data-dir=" + profile_dir_,
                                   "--remote-debugging-pipe",
                                   "file://" + page};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The browser's stderr goes to a file (its last lines explain a failure), stdin and stdout to
  // /dev/null: opened here, numbered 10 and up, since the child's dup2 onto 3 and 4 comes first.
  const std::string log = profile_dir_ + "/stderr.txt";
  const int err = high_fd(open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  const int null = high_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
  const int parent = getpid();
  pid_ = fork();
  if (pid_ < 0) throw Error(sys_error("WEBGPU: fork"));
  if (pid_ == 0) {
    // The child: only async-signal-safe calls until exec. The browser dies with this process.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (dup2(child_in, 3) < 0 || dup2(child_out, 4) < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
        dup2(err, 2) < 0)
      _exit(127);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(child_in);
  close(child_out);
  close(err);
  close(null);
  try {
    attach();
  } catch (...) {
    shutdown();
    throw;
  }
}

// The page's target, a session on it, and the page loaded.
void Chromium::attach() {
  // The page's target, then a session on it (flatten: messages carry the sessionId).
  auto result = [](const std::string& reply) { return *json::parse(reply).find("result"); };
  const json::Value t = result(command("Target.getTargets", "{}", false));
  std::string target_id;
  if (const json::Value* infos = t.find("targetInfos"))
    for (const json::Value& info : infos->items)
      if (const json::Value* type = info.find("type"); type && type->text == "page")
        target_id = info.find("targetId")->text;
  if (target_id.empty()) fail("the browser has no page");
  const json::Value attached = result(command(
      "Target.attachToTarget", "{\"targetId\":" + json::quote(target_id) + ",\"flatten\":true}", false));
  session_id_ = attached.find("sessionId")->text;
  const json::Value browser_version = result(command("Browser.getVersion", "{}", false));
  if (const json::Value* product = browser_version.find("product")) version_ = product->text;
  // The page may still be loading (about:blank first): wait until the file has loaded, since WebGPU
  // exists only in a secure context (a file: page is one).
  const auto start = std::chrono::steady_clock::now();
  while (evaluate("location.protocol + document.readyState") != "\"file:complete\"") {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) fail("the page did not load");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Chromium::~Chromium() { shutdown(); }

void Chromium::shutdown() {
  if (pid_ > 0) {
    if (!dead_) {
      try {
        send_message("{\"id\":0,\"method\":\"Browser.close\",\"params\":{}}");
      } catch (const std::exception&) {
      }
    }
    // Up to 5 s for a clean exit (it removes its own lock files), then SIGKILL.
    int status = 0;
    bool exited = false;
    for (int i = 0; i < 500 && !exited; i++) {
      exited = waitpid(pid_, &status, WNOHANG) == pid_;
      if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!exited) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }
  if (to_browser_ >= 0) close(to_browser_);
  if (from_browser_ >= 0) close(from_browser_);
  to_browser_ = from_browser_ = -1;
  std::error_code ec;
  if (!profile_dir_.empty()) fs::remove_all(profile_dir_, ec);
  profile_dir_.clear();
}

std::string Chromium::last_words() const {
  std::ifstream in(profile_dir_ + "/stderr.txt");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), out;
  // dbus complaints are noise in a container: keep the other lines, the last few.
  size_t start = 0;
  std::vector<std::string> kept;
  while (start < all.size()) {
    size_t end = all.find('\n', start);
    if (end == std::string::npos) end = all.size();
    std::string line = all.substr(start, end - start);
    if (!line.empty() && line.find("dbus") == std::string::npos) kept.push_back(line);
    start = end + 1;
  }
  for (size_t i = kept.size() > 6 ? kept.size() - 6 : 0; i < kept.size(); i++) out += "\n  " + kept[i];
  return out;
}

void Chromium::fail(const std::string& what) {
  dead_ = true;
  throw Error("WEBGPU: Chromium: " + what + last_words());
}

void Chromium::send_message(const std::string& text) {
  std::string msg = text;
  msg.push_back('\0');
  size_t done = 0;
  while (done < msg.size()) {
    ssize_t n = send(to_browser_, msg.data() + done, msg.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(sys_error("the browser stopped reading commands"));
    done += static_cast<size_t>(n);
  }
}

std::string Chromium::receive_message(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    if (size_t end = inbox_.find('\0'); end != std::string::npos) {
      std::string msg = inbox_.substr(0, end);
      inbox_.erase(0, end + 1);
      return msg;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) fail("no reply in " + std::to_string(static_cast<int>(timeout_s)) + " s");
    pollfd p{from_browser_, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail(sys_error("poll"));
    if (r == 0) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        fail("the browser exited");
      }
      continue;
    }
    char buf[1 << 16];
    ssize_t n = read(from_browser_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("the browser closed the pipe");
    inbox_.append(buf, static_cast<size_t>(n));
  }
}

// Sends one command and returns its reply's JSON text (an evaluate's: the value's JSON text),
// skipping events and replies to other commands.
std::string Chromium::command(const std::string& method, const std::string& params_json, bool in_page) {
  if (dead_) throw Error("WEBGPU: Chromium stopped earlier in this process" + last_words());
  const long id = next_id_++;
  send_message("{\"id\":" + std::to_string(id) + ",\"method\":" + json::quote(method) + ",\"params\":" +
               params_json + (in_page ? ",\"sessionId\":" + json::quote(session_id_) : "") + "}");
  for (;;) {
    const std::string msg = receive_message(command_timeout());
    // Replies start {"id":N,...: events (no id) and other replies are skipped unparsed.
    const std::string head = "{\"id\":" + std::to_string(id) + ",";
    if (msg.compare(0, head.size(), head) != 0) continue;
    json::Value v = json::parse(msg);
    if (const json::Value* e = v.find("error")) {
      const json::Value* m = e->find("message");
      throw Error("WEBGPU: Chromium: " + method + " failed: " + (m ? m->text : "(no message)"));
    }
    const json::Value* result = v.find("result");
    if (!result) throw Error("WEBGPU: Chromium: " + method + " gave no result");
    if (method != "Runtime.evaluate") return msg;  // the caller reads its "result"
    if (const json::Value* ex = result->find("exceptionDetails")) {
      std::string text;
      if (const json::Value* exc = ex->find("exception"))
        if (const json::Value* d = exc->find("description")) text = d->text;
      if (text.empty())
        if (const json::Value* t = ex->find("text")) text = t->text;
      throw Error("WEBGPU: " + text);
    }
    const json::Value* r = result->find("result");
    const json::Value* value = r ? r->find("value") : nullptr;
    return value && value->kind == json::Kind::String ? value->text : "";
  }
}

std::string Chromium::evaluate(const std::string& expression) {
  std::lock_guard<std::mutex> lock(mu_);
  // The value as JSON text made in the page: one string comes back whatever the value is.
  const std::string wrapped = "(async () => JSON.stringify(await (" + expression + "\n)))()";
  return command("Runtime.evaluate",
                 "{\"expression\":" + json::quote(wrapped) + ",\"awaitPromise\":true,\"returnByValue\":true}",
                 true);
}

std::string Chromium::page_command(const std::string& method, const std::string& params_json) {
  if (method == "Runtime.evaluate") throw Error("WEBGPU: Chromium: use evaluate() for Runtime.evaluate");
  std::lock_guard<std::mutex> lock(mu_);
  return command(method, params_json, true);
}

void Chromium::navigate(const std::string& url) {
  const json::Value reply = json::parse(page_command("Page.navigate", "{\"url\":" + json::quote(url) + "}"));
  if (const json::Value* r = reply.find("result"))
    if (const json::Value* e = r->find("errorText"); e && !e->text.empty())
      throw Error("WEBGPU: Chromium: cannot load " + url + ": " + e->text);
  // The old document may still answer for a moment, or none (an evaluation meeting the switch
  // fails: "Execution context was destroyed"): wait for the new one, loaded.
  const std::string loaded =
      "location.href === " + json::quote(url) + " && document.readyState === \"complete\"";
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    std::string why;
    try {
      if (evaluate(loaded) == "true") return;
    } catch (const Error& e) {
      if (dead_) throw;
      why = std::string(": ") + e.what();
    }
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60))
      throw Error("WEBGPU: Chromium: " + url + " did not load in 60 s" + why);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

namespace {
Chromium* the_browser = nullptr;
void close_browser() {
  delete the_browser;
  the_browser = nullptr;
}
}  // namespace

Chromium& browser() {
  // Started once: a failure is remembered too, so a process that asks again (each test of a suite
  // opening its device) does not start a browser each time. Closed by an atexit handler.
  static std::mutex mu;
  static std::string failed;
  std::lock_guard<std::mutex> lock(mu);
  if (the_browser) return *the_browser;
  if (!failed.empty()) throw Error(failed);
  try {
    const std::string binary = find_chromium();
    if (binary.empty())
      throw Error(
          "WEBGPU: no Chromium (chromium, chromium-browser or google-chrome on PATH, or LAZYGRAD_CHROMIUM); "
          "install Debian's chromium");
    the_browser = new Chromium(binary);
    std::atexit(close_browser);
  } catch (const std::exception& e) {
    failed = e.what();
    throw;
  }
  return *the_browser;
}

}  // namespace lazygrad::webgpu
