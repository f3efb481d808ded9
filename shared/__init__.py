"""What two or more verirl services use: task and verdict contracts, settings, protocol, metrics."""
