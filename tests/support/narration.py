"""Before/after narration of measured figures, and where prose hides in code (comments, docstrings).

Measured figures belong in the records under docs/measurements/ (rendered into docs/measurements.md)
and in commit bodies; prose that narrates a change ("19.8 -> 15.4 MB", "from 14.9 s to 14.0 s") goes
stale with the next one. The README's test, the docs pages' test and the code-comment test share this
one rule. Standard library only, so the checks run with nothing installed but pytest.
"""

import ast
import io
import re
import tokenize

# "(was 16.39)", "35.5-38.4 ms before" (but not "0 before any"), "from 14.9 s to 14.0 s", "30.9 MB instead of 61.0 MB",
# "19.8 -> 15.4 MB", "245-259 -> 93-100 ms", "0.950 → 0.942". An arrow between an arXiv id and what it
# encodes ("1706.03762 -> 2017-06", "hep-th/9901001 -> 1999-01") is a mapping, not a measurement.
NARRATED_FIGURE = re.compile(
    r"\(was \d"
    r"|\d(?:[\d,]*\.\d+|\S*? ?(?:ms|s|MB|KB|GB|%)) before\b"
    r"|\bfrom \d[\d.,]* ?\S* to \d"
    r"|\d ?\S* instead of \d"
    r"|(?<![\w./-])(?!\d{4}\.\d{4,5})\d[\d.,]*(?:-\d[\d.,]*)? ?[%a-zA-Z/]* ?(?:->|→) ?[~≈]?\d"
)


def python_prose(source: str) -> list[tuple[int, str]]:
    """Every comment and docstring line of a Python module, as (line number, text)."""
    lines: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            lines[token.start[0]] = token.string
    text = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = node.body[0] if node.body else None
            if (
                isinstance(docstring, ast.Expr)
                and isinstance(docstring.value, ast.Constant)
                and isinstance(docstring.value.value, str)
            ):
                end = docstring.end_lineno or docstring.lineno
                for number in range(docstring.lineno, end + 1):
                    lines[number] = text[number - 1]
    return sorted(lines.items())


# After one of these characters or words, a `/` opens a regular expression rather than dividing.
_REGEX_AFTER_CHARS = set("(,=:[!&|?{};+-*%<>~^")
_REGEX_AFTER_WORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw"}


def javascript_prose(source: str) -> list[tuple[int, str]]:
    """Every `//` and `/* */` comment line of a JavaScript module, as (line number, text).

    A small lexer: strings, template literals (with `${}` nesting) and regular expression literals are
    skipped, so `"http://..."` or `/\\/\\//` is not read as a comment.
    """
    found: dict[int, list[str]] = {}
    i, n, line = 0, len(source), 1
    braces: list[int] = []  # for each open `${`, the brace depth at which its template resumes
    depth = 0
    previous = ""  # the last significant character or word, to tell a regex from a division

    def note(start: int, end: int, first_line: int) -> None:
        for offset, part in enumerate(source[start:end].split("\n")):
            found.setdefault(first_line + offset, []).append(part)

    def template(i: int) -> int:
        """Skip a template literal's text from just after its backtick (or a closing `}`)."""
        nonlocal line
        while i < n:
            c = source[i]
            if c == "\\":
                i += 2
                continue
            if c == "\n":
                line += 1
            if c == "`":
                return i + 1
            if c == "$" and source.startswith("${", i):
                braces.append(depth)
                return -(i + 2)  # back to code
            i += 1
        return n

    while i < n:
        c = source[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
            note(i, end, line)
            i = end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            note(i, end, line)
            line += source.count("\n", i, end)
            i = end
        elif c in "\"'":
            i += 1
            while i < n and source[i] != c and source[i] != "\n":
                i += 2 if source[i] == "\\" else 1
            i += 1
            previous = "a"
        elif c == "`":
            resumed = template(i + 1)
            i = -resumed if resumed < 0 else resumed
            previous = "a"
        elif c == "/" and (
            previous == "" or previous in _REGEX_AFTER_CHARS or previous in _REGEX_AFTER_WORDS
        ):
            i += 1
            in_class = False
            while i < n and source[i] != "\n":
                d = source[i]
                if d == "\\":
                    i += 2
                    continue
                if d == "[":
                    in_class = True
                elif d == "]":
                    in_class = False
                elif d == "/" and not in_class:
                    break
                i += 1
            i += 1
            previous = "a"
        elif c == "{":
            depth += 1
            previous = c
            i += 1
        elif c == "}":
            if braces and braces[-1] == depth:
                braces.pop()
                resumed = template(i + 1)
                i = -resumed if resumed < 0 else resumed
                previous = "a"
            else:
                depth -= 1
                previous = c
                i += 1
        elif c.isalnum() or c in "_$":
            start = i
            while i < n and (source[i].isalnum() or source[i] in "_$"):
                i += 1
            previous = source[start:i]
            if previous not in _REGEX_AFTER_WORDS:
                previous = "a"
        else:
            previous = c
            i += 1
    return [(number, " ".join(parts)) for number, parts in sorted(found.items())]


def narrated_lines(prose: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The lines of `prose` that narrate a before/after figure."""
    return [(number, text.strip()) for number, text in prose if NARRATED_FIGURE.search(text)]
