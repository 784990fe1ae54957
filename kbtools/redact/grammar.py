"""One assignment grammar: how a value is bound to a name, in every language we meet.

An assignment rule is ``name`` + one of :data:`SYNTAXES` + a value in one of the
:data:`VALUE_FORMS`. A new language's syntax is one :class:`Syntax` entry here (its
``example`` is planted with a secret by the tests and the evaluation corpus), not a new
regex per rule.

    key   := [<] or [quote]  name  [closing quote]
    bind  := SYNTAXES (operators, typed declarations, call arguments, subscripts,
             XML attribute pairs, comparisons) | XML element (`<name …>` value `</`)
    value := [YAML tag] [block scalar indicator] [auth scheme word] VALUE_FORMS

Only the value is the secret's span: the key, its quotes, a YAML tag and an HTTP
scheme word stay, so JSON stays JSON and a reader still sees what was there.

Every quantifier is bounded and alternatives inside a repetition never overlap, so a
match costs linear time on hostile input.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Syntax:
    id: str
    between: str  # regex between the (closed) key and the value
    example: str  # `{name}` and `{value}` are filled in by tests and the evaluation corpus
    quoted_key: bool = False  # only when the key is quoted (call arguments, attribute pairs, subscripts)
    quoted_value: bool = False  # only a quoted value (a comparison with a bare word is code, not a secret)


# Order matters only inside one alternation: longer operators first.
SYNTAXES: tuple[Syntax, ...] = (
    Syntax(
        "typed-declaration",
        r"[ \t]{0,8}:[ \t]{0,4}(?:str|bytes|string|String|SecretStr|Optional\[str\]|str[ \t]?\|[ \t]?None)"
        r"[ \t]{0,4}=(?![=>])",
        '{name}: str = "{value}"',
    ),
    Syntax("go-typed-var", r"[ \t]{1,4}(?:string|\[\]byte)[ \t]{0,4}=(?![=>])", 'var {name} string = "{value}"'),
    Syntax("makefile-immediate", r"[ \t]{0,8}:::?=", "{name} ::= {value}"),
    Syntax("walrus-or-go-short", r"[ \t]{0,8}:=", "{name} := `{value}`"),
    Syntax("conditional-or-append", r"[ \t]{0,8}[?+.|]\|?=(?!=)", "{name} ?= {value}"),
    Syntax("arrow", r"[ \t]{0,8}=>", "'{name}' => '{value}'"),
    Syntax("comparison", r"[ \t]{0,8}(?:===?|!==?)", 'if ({name} == "{value}")', quoted_value=True),
    Syntax("equals", r"[ \t]{0,8}=(?![=>~])", "{name}={value}"),
    Syntax("colon", r"[ \t]{0,8}:(?![:=])", "{name}: {value}"),
    Syntax("subscript", r"\][ \t]{0,8}(?:\|\||[+?])?=(?![=>])", 'os.environ["{name}"] = "{value}"', quoted_key=True),
    Syntax("call-argument", r"[ \t]{0,4},", 'System.setProperty("{name}", "{value}")', quoted_key=True),
    Syntax(
        "xml-attribute-pair",
        r"[ \t\r\n]{1,16}(?:[Vv]alue|VALUE)[ \t]{0,2}=",
        '<add key="{name}" value="{value}"/>',
        quoted_key=True,
    ),
)

# Examples of the two forms that are not a Syntax entry: an XML element, and a YAML tag.
XML_ELEMENT_EXAMPLE = "<{name}>\n    {value}\n</{name}>"
YAML_TAG_EXAMPLE = "{name}: !!binary {value}"
CSHARP_VERBATIM_EXAMPLE = 'var {name} = @"{value}";'

# HTTP authorization scheme words: they stay readable, the credential after them goes.
SCHEMES = (
    "Bearer",
    "Basic",
    "Token",
    "Bot",
    "Digest",
    "Api-Token",
    "ApiKey",
    "Api-Key",
    "FlyV1",
    "SSWS",
    "GenieKey",
    "OAuth",
    "JWT",
    "Splunk",
    "Key",
    "Negotiate",
    "NTLM",
    "DPoP",
)
_SCHEME = r"(?:(?i:" + "|".join(s.replace("-", r"\-") for s in SCHEMES) + r")[ \t]{1,4})?"

# A YAML tag (`!!binary`, `!secret`, `!vault`) and a block scalar indicator (`|`, `>-`) before the value.
_VALUE_PREFIX = r"(?:!{1,2}[A-Za-z0-9_./:-]{1,64}[ \t]{1,4})?(?:[|>][-+]?[1-9]?[ \t]{0,8}\r?\n[ \t]{1,32})?"

# One character of a bare value; `{` anywhere, `}` only inside (not the closing brace of JSON),
# an escaped backslash `\\` and a backslash that escapes nothing JSON knows.
_UNIT = r"[^\s,;\"'`\\<>()\[\]{}&|]"
_BARE_UNIT = r"(?:" + _UNIT + r"|\{|\}(?=" + _UNIT + r")|\\\\|\\(?![nrt\"'u\\/]))"

# A value in one of its forms; the group that matched is the secret. In the escaped form (JSON
# inside a JSON string) a unit is an escaped escape, another escape, or a plain character.
VALUE_FORMS: tuple[tuple[str, str], ...] = (
    ("v_edq", r'\\"' + _SCHEME + r'(?P<v_edq>(?:\\\\(?:\\[\\"]|[^\\"])|\\[^\\"]|[^\\"\r\n]){1,4096})\\"'),
    ("v_at", r'@"' + _SCHEME + r'(?P<v_at>(?:[^"\r\n]|""){1,4096})"'),
    ("v_dq", r'(?:[rRbBuU]{1,2})?"' + _SCHEME + r'(?P<v_dq>(?:[^"\\\r\n]|\\.){1,4096})"'),
    ("v_sq", r"(?:[rRbBuU]{1,2})?'" + _SCHEME + r"(?P<v_sq>(?:[^'\\\r\n]|\\.){1,4096})'"),
    ("v_bt", r"`(?P<v_bt>[^`\r\n]{1,4096})`"),
    ("v_bare", _SCHEME + r"(?![{}])(?P<v_bare>" + _BARE_UNIT + r"{1,4096}+)"),
)
VALUE_GROUPS = tuple(name for name, _ in VALUE_FORMS) + ("v_xml",)
_VALUE = r"(?:" + "|".join(form for _, form in VALUE_FORMS) + r")"
_QUOTED_AHEAD = r"(?=[ \t]{0,8}(?:@|[rRbBuU]{1,2})?(?:\\?[\"']|`))"

_XML_ELEMENT = r"(?:[ \t][^<>\r\n]{0,256})?>[ \t\r\n]{0,64}(?P<v_xml>[^<>\s\"']{1,4096}+)(?=[ \t\r\n]{0,64}</)"


def _binding(syntax: Syntax) -> str:
    between = syntax.between + (_QUOTED_AHEAD if syntax.quoted_value else "")
    return f"(?(kq){between}|(?!))" if syntax.quoted_key else between


_BINDINGS = r"(?:" + "|".join(_binding(s) for s in SYNTAXES) + r")"


def assignment(name: str, *, slash: bool = False) -> str:
    """``name`` (a case-insensitive regex for the whole key), bound by any syntax, then a value.

    A bare value starting with ``/`` is a path (``TOKEN_FILE=/run/secrets/t``), unless
    ``slash``: a rule whose check tells a path from a random value (a base64 secret
    starts with ``/`` one time in 64)."""
    not_after = r"(?![=:])" if slash else r"(?![=:/])"
    return (
        r"(?:(?P<lt><)|(?P<kq>\\?[\"']))?(?<![A-Za-z0-9_-])(?<![$%#]\{)"
        r"(?!(?i:key|name)=\"[^\"<>]{0,256}\"[ \t\r\n]{1,16}(?:[Vv]alue|VALUE)=)"  # `key="…"` of a key/value pair
        rf"(?P<name>(?i:{name}))"
        r"(?:(?(lt)" + _XML_ELEMENT + r"|(?!))"
        r"|(?(lt)(?!))(?(kq)(?P=kq))" + _BINDINGS + not_after + r"[ \t]{0,8}" + _VALUE_PREFIX + _VALUE + r")"
    )
