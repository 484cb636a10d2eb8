"""JSON encoding shared by the checks of what is stored (arguments.py: payloads and signal
data; storable.py: handlers' results), below both."""
import json
from collections.abc import Callable


def acyclic_encoder(encoder: json.JSONEncoder) -> Callable[[object], str] | None:
    """`encoder.encode` for values known to contain no cycle, or None without json's C module
    (another Python implementation). JSONEncoder.encode builds its C half again at each call,
    about half the time a small value takes to encode; this is that C half, built once with
    `encoder`'s options (json.encoder's own arguments for them). It keeps no markers of the
    containers it is in, so a cyclic value would recurse without end: callers first walk the
    value (storable._walk for a result, arguments.check_json for a payload) and give a cyclic
    one to `encoder.encode`."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None or encoder.indent is not None:
        return None
    quote = (json.encoder.encode_basestring_ascii if encoder.ensure_ascii
             else json.encoder.encode_basestring)
    one_shot = make(None, encoder.default, quote, None, encoder.key_separator,
                    encoder.item_separator, encoder.sort_keys, encoder.skipkeys,
                    encoder.allow_nan)
    return lambda value: "".join(one_shot(value, 0))
