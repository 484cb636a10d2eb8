from django.core.management.base import BaseCommand, CommandError

from django_pg_jobqueue.api.openapi import SchemaWarnings, render_schema


class Command(BaseCommand):
    help = ("Write the job queue API's OpenAPI schema, as <prefix>schema/ serves it: the API's "
            "own views at the prefix ROOT_URLCONF mounts them at, with the API's own "
            "drf-spectacular settings (django_pg_jobqueue.api.openapi.SETTINGS).")

    def add_arguments(self, parser):
        parser.add_argument("--file", help="Write to this file (default: standard output).")
        parser.add_argument("--format", choices=["yaml", "json"], default="yaml")
        parser.add_argument("--urlconf", help="A URLconf module other than ROOT_URLCONF.")
        parser.add_argument("--validate", action="store_true",
                            help="Fail unless the schema conforms to OpenAPI 3.")
        parser.add_argument("--fail-on-warn", action="store_true",
                            help="Fail if drf-spectacular warns while generating it.")

    def handle(self, *args, **options):
        try:
            output = render_schema(fmt=options["format"], validate=options["validate"],
                                   fail_on_warn=options["fail_on_warn"],
                                   urlconf=options["urlconf"])
        except (SchemaWarnings, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if options["file"]:
            with open(options["file"], "wb") as out:
                out.write(output)
        else:
            self.stdout.write(output.decode())
