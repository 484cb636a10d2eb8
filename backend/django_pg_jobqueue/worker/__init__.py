"""The worker process: a pool of executor threads fed by a lane per queue group (the thread
that claims for them), and the maintenance services beside them (lease renewer, reaper,
NOTIFY listener, completer)."""
