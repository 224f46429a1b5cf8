"""The harness around the kernels: for now the remote runner (harness.runner) and the leaderboards' deadlines."""
