"""Output: what dsv4-launch prints, and only here.

``escape`` makes outside text safe for a terminal, ``redact`` masks secrets by position (from
the parse) and credentials in URLs before anything is serialised, ``lines`` writes one-line
messages (plain or Rich) without ever letting a broken stream stop the hand-over, ``report``
turns a plan into lines, ``documents`` into JSON.
"""
