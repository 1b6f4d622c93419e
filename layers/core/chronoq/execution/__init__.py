"""The run state machine's side: its contract, the runner's targets, the ASL file."""
