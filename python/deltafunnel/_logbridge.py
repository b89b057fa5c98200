"""The bridge from Delta Funnel events to Python logging.

``init_logging`` installs it once per process with a filter of
``target=level`` directives (already validated by the native library).  An
event is forwarded when the most specific directive whose target is a
prefix of the event's target allows its level.  Records go to
``logging.getLogger(<logger>)`` with ``extra`` fields prefixed
``deltafunnel_`` (all values as strings); handlers and levels stay the
application's business.
"""

import logging

_LEVELS = {"off": None, "error": logging.ERROR, "warn": logging.WARNING, "info": logging.INFO,
           "debug": logging.DEBUG, "trace": logging.DEBUG}
_NUMERIC = {"0": "off", "1": "error", "2": "warn", "3": "info", "4": "debug", "5": "trace"}
_ORDER = ["off", "error", "warn", "info", "debug", "trace"]

_state = None


class _Filter:
    """Parsed directives: (target prefix, maximum level name); the default applies to every target."""

    def __init__(self, text):
        self.directives = []
        self.default = None
        for raw in text.split(","):
            part = raw.strip()
            if not part:
                continue
            if "[" in part and (part.find("=") < 0 or part.index("[") < part.index("=")):
                # A span filter "target[span{field=value}]" may hold '=' itself.
                head, _, rest = part.partition("]")
                target = head[: head.index("[")]
                sep, level = ("=", rest[1:]) if rest.startswith("=") else ("", "")
            else:
                target, sep, level = part.partition("=")
            if not sep:
                name = _level_name(part)
                if name is not None:
                    self.default = name
                else:
                    self.directives.append((target, "trace"))
                continue
            name = _level_name(level)
            if target:
                self.directives.append((target, name))
            else:
                self.default = name
        # Longest targets first: the most specific directive wins.
        self.directives.sort(key=lambda d: len(d[0]), reverse=True)

    def allows(self, target, level):
        limit = self.default
        for prefix, name in self.directives:
            if target == prefix or target.startswith(prefix + "::"):
                limit = name
                break
        if limit is None:
            return False
        return _ORDER.index(level) <= _ORDER.index(limit) and limit != "off"


def _level_name(text):
    text = text.strip().lower()
    if text in _NUMERIC:
        return _NUMERIC[text]
    return text if text in _LEVELS else None


def install(filter_text, logger_name):
    """Installs the bridge (called once by init_logging)."""
    global _state
    _state = (_Filter(filter_text), logger_name)


def installed():
    return _state is not None


def emit(target, level, message, fields=None):
    """Forwards one event when the filter allows it.  `level` is a name: error..trace."""
    if _state is None:
        return
    flt, logger_name = _state
    if not flt.allows(target, level):
        return
    extra = {"deltafunnel_target": target, "deltafunnel_level": level.upper()}
    for key, value in (fields or {}).items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        extra["deltafunnel_" + key] = str(value)
    logging.getLogger(logger_name).log(_LEVELS[level] or logging.DEBUG, message, extra=extra)
