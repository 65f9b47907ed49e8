// A folder served over HTTP on 127.0.0.1, from a thread of the test's own process: what a user does
// with `python3 -m http.server -d DIR` to open an exported page (docs/webgpu.md), without a Python
// process or a fixed port (the kernel picks a free one). http://127.0.0.1 is a secure context, so the
// page has WebGPU; a page opened from file:// could not fetch its weights or import its module.
// GET only, one request per connection, files directly in the folder or below it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace lazygrad::test {

class HttpFileServer {
 public:
  explicit HttpFileServer(std::filesystem::path root) : root_(std::move(root)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("HttpFileServer: cannot listen on 127.0.0.1");
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~HttpFileServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  HttpFileServer(const HttpFileServer&) = delete;
  HttpFileServer& operator=(const HttpFileServer&) = delete;

  std::string url(const std::string& path = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/" + path;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      answer(client);
      close(client);
    }
  }

  void answer(int client) {
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = recv(client, buf, sizeof buf, 0);
      if (n <= 0) return;
      request.append(buf, static_cast<size_t>(n));
    }
    std::istringstream line(request.substr(0, request.find("\r\n")));
    std::string method, target;
    line >> method >> target;
    target = target.substr(0, target.find('?'));
    if (target.empty() || target.back() == '/') target += "index.html";
    const std::filesystem::path path = root_ / target.substr(1);
    std::ifstream file(path, std::ios::binary);
    if (method != "GET" || target.find("..") != std::string::npos || !file ||
        !std::filesystem::is_regular_file(path)) {
      send_all(client, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    std::ostringstream body;
    body << file.rdbuf();
    const std::string bytes = body.str();
    send_all(client, "HTTP/1.1 200 OK\r\nContent-Type: " + content_type(path) + "\r\nContent-Length: " +
                         std::to_string(bytes.size()) + "\r\nConnection: close\r\n\r\n");
    send_all(client, bytes);
  }

  // Module scripts must come with a JavaScript type, or the browser refuses them.
  static std::string content_type(const std::filesystem::path& path) {
    const std::string ext = path.extension().string();
    if (ext == ".html") return "text/html; charset=utf-8";
    if (ext == ".js") return "text/javascript; charset=utf-8";
    if (ext == ".json") return "application/json";
    if (ext == ".txt") return "text/plain; charset=utf-8";
    return "application/octet-stream";
  }

  static void send_all(int client, const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = send(client, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

  std::filesystem::path root_;
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace lazygrad::test
