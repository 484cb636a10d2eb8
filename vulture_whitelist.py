"""Names vulture (make lint, 80% confidence) reports as unused that a framework uses: the
arguments Django, DRF and gunicorn pass by position or keyword whether a hook reads them or
not, and an import made for what it registers. Each is a plain reference, as vulture reads
whitelists; nothing imports this file."""
# ruff: noqa
app_configs  # system checks: check(app_configs, **kwargs)
model_admin  # admin list filters: lookups(request, model_admin), queryset(...)
change, form  # ModelAdmin.has_*_permission / save_model(request, obj, form, change)
parser_context  # DRF parsers: parse(stream, media_type, parser_context)
hints, model_name  # database routers: db_for_read(model, **hints), allow_migrate(...)
frame  # signal handlers: handler(signum, frame)
server  # gunicorn server hooks: on_starting(server), when_ready(server)
builtin_handlers  # backend/demo/handlers.py imports it for the handlers it registers
