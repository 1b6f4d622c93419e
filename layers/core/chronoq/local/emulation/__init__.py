"""Where moto's emulation differs from AWS in a way chronoq depends on, align it: one module
per concern, each patch installed into moto's classes by chronoq.local.aws.LocalAWS when it
starts, reading the embedded AWS's state through ``state.active``.

- ``moto_version``: the moto internals the patches reach into, and the check that the
  installed moto has them;
- ``state``: what the patches read (the meter, chronoq's own prefix, the clock, how
  containers run), one per embedded AWS, active while it runs;
- ``service_calls``: how SDK calls reach moto (one at a time, metered, denied as IAM would);
- ``stepfunctions``: the state machine interpreter (clients, parsing, EXPRESS, waits);
- ``sqs``: queue timers by chronoq local's clock;
- ``dynamodb``: the PartiQL INSERT chronoq adds audit entries with (parameters; a key that
  exists refused);
- ``containers``: ECS tasks run as host processes or in Docker;
- ``ecs``: ECS as Step Functions calls it (names and network; read by chronoq.local.engine).

No module here imports moto until a function that patches or reads it is called."""
