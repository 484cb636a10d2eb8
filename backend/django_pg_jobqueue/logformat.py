"""JOB_LOG_FORMAT=json: one JSON object per log line, with the job fields passed in `extra`."""
import json
import logging

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        out.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


LOGGER_NAME = "django_pg_jobqueue"
SUMMARY_LOGGER = "django_pg_jobqueue.summary"  # worker/stats.py's


def configure_worker_logging(level: str, log_format: str) -> bool:
    """Make `run_job_workers` log with the host's LOGGING untouched.

    If the host's LOGGING gives this package's logger (or one of its ancestors, root included)
    a handler, that configuration wins and only an unset level is filled in from
    JOB_WORKER_LOG_LEVEL. Otherwise the lines would go nowhere (Python's last-resort handler
    prints warnings only), so a stderr handler is installed with JOB_LOG_FORMAT's formatter.
    Returns whether a handler was installed.
    """
    logger = logging.getLogger(LOGGER_NAME)
    if logger.level == logging.NOTSET:
        logger.setLevel(level.upper())
    # The once-a-second summary of finished jobs (worker/stats.py) is the project's to turn
    # on, by naming its logger in LOGGING (the demo does): silent otherwise.
    summary = logging.getLogger(SUMMARY_LOGGER)
    if summary.level == logging.NOTSET:
        summary.setLevel(logging.WARNING)
    if logger.hasHandlers():
        return False
    stream = logging.StreamHandler()
    stream.setFormatter(JsonFormatter() if log_format == "json" else
                        logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logger.addHandler(stream)
    logger.propagate = False
    return True
