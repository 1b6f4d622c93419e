"""The local engine: chronoq's own tables, queues and run state machine, built for one
machine (SQLite on disk, in-process queues, chronoq's own ASL interpreter), answering the
same API calls the AWS adapters make."""
