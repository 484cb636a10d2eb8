"""The worker process: a pool of executor threads fed by a dispatcher per lane, and the
maintenance services beside them (lease renewer, reaper, NOTIFY listener, completer)."""
