"""Where student code runs: a worker process in an OS sandbox (isolation), reached through a proxy over a
symmetric wire protocol, watched by the guard."""
