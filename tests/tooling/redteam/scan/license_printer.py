printer = license.__class__("x", "", ["/proc/self/status"], ["/"])
