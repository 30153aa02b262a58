"""Builds Public/livelist.js from the readable Public/livelist.src.js, and likewise livelist-window.js and
livelist-shared.js from their .src.js, with no dependencies.

    python3 -m livelist_tools.minify           # writes all three, prints raw and gzipped sizes
    python3 -m livelist_tools.minify --check   # exits 1 when one is not the current build

It is a minifier for this one file's style, not for any JavaScript: it drops comments (but keeps the
leading /*! header) and whitespace (a line break stays wherever automatic semicolon insertion could
depend on it), renames the script's own multi-letter identifiers to short unused names, and writes true and false
as !0 and !1. Property
names are never renamed: a name after `.` stays, an object key stays (`key:`, a method `key() {`), and a
shorthand member `{name}` is written as `{name:short}`. Globals stay (GLOBALS below). The browser tests
run the built file, so a renaming mistake fails them.
"""
import argparse
import gzip
import re
import sys
from pathlib import Path

from .paths import ROOT as CHECKOUT

ROOT = Path(CHECKOUT)
BUILDS = [(ROOT / "Public" / "livelist.src.js", ROOT / "Public" / "livelist.js"),
          (ROOT / "Public" / "livelist-window.src.js", ROOT / "Public" / "livelist-window.js"),
          (ROOT / "Public" / "livelist-shared.src.js", ROOT / "Public" / "livelist-shared.js")]

KEYWORDS = set("""break case catch class const continue debugger default delete do else export extends false
finally for function if import in instanceof let new null of return super switch this throw true try typeof
undefined var void while with yield async await static get set""".split())
GLOBALS = set("""document window Map WeakMap Set Error Math Date Promise JSON Object Array CustomEvent
IntersectionObserver EventSource AbortController fetch setTimeout clearTimeout getComputedStyle matchMedia
innerHeight encodeURIComponent requestAnimationFrame NaN Infinity console FormData URLSearchParams performance
navigator BroadcastChannel LiveList LLW location decodeURIComponent Float64Array self queueMicrotask
addEventListener Event MessageEvent EventTarget SharedWorker URL""".split())
WORD = re.compile(r"[A-Za-z_$][\w$]*")
NUMBER = re.compile(r"(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
PUNCT = sorted(""">>>= ... === !== **= <<= >>= >>> => == != <= >= && || ?? ?. ** ++ -- += -= *= /= %= &= |= ^= << >>
{ } ( ) [ ] ; , < > + - * / % & | ^ ! ~ ? : = . @ #""".split(), key=len, reverse=True)
OBJECT_AFTER = {"(", ",", "=", ":", "?", "[", "||", "&&", "??", "!", "+"}
REGEX_AFTER_WORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "instanceof"}


class Token:
    def __init__(self, kind, text, newline_before=False, space_before=False):
        self.kind, self.text = kind, text  # kind: id num str re punct raw (template text) com
        self.newline_before, self.space_before = newline_before, space_before

    def __repr__(self):
        return f"{self.kind}:{self.text!r}"


def tokenize(src):
    tokens, i, n = [], 0, len(src)
    braces = []  # "{" or "${" still open, to find where a template's expression ends
    newline = space = False

    def previous():
        return tokens[-1] if tokens else None

    def template_text(start):  # from just after ` or the } closing a ${…}, up to ` or ${
        j = start
        while j < n:
            if src[j] == "\\":
                j += 2
            elif src[j] == "`":
                return j + 1, False
            elif src.startswith("${", j):
                return j + 2, True
            else:
                j += 1
        raise SyntaxError("unterminated template literal")

    while i < n:
        c = src[i]
        if c in " \t\r\n":
            newline |= c == "\n"
            space = True
            i += 1
            continue
        if src.startswith("//", i):
            i = src.find("\n", i)
            i = n if i < 0 else i
            continue
        if src.startswith("/*", i):
            end = src.index("*/", i) + 2
            if src.startswith("/*!", i):
                tokens.append(Token("com", src[i:end], newline, space))
            newline |= "\n" in src[i:end]
            space, i = True, end
            continue
        start = i
        if c in "'\"":
            i += 1
            while src[i] != c:
                i += 2 if src[i] == "\\" else 1
            i += 1
            kind = "str"
        elif c == "`" or (c == "}" and braces and braces[-1] == "${"):
            if c == "}":
                braces.pop()
            i, opens = template_text(i + 1)
            if opens:
                braces.append("${")
            kind = "raw"
        elif WORD.match(src, i):
            i = WORD.match(src, i).end()
            kind = "id"
        elif NUMBER.match(src, i):
            i = NUMBER.match(src, i).end()
            kind = "num"
        elif c == "/" and (previous() is None or (previous().kind == "punct" and previous().text not in ")]}")
                           or (previous().kind == "id" and previous().text in REGEX_AFTER_WORDS)):
            i += 1
            in_class = False
            while src[i] != "/" or in_class:
                if src[i] == "\\":
                    i += 1
                elif src[i] == "[":
                    in_class = True
                elif src[i] == "]":
                    in_class = False
                i += 1
            i += 1
            while i < n and src[i].isalpha():
                i += 1
            kind = "re"
        else:
            op = next(p for p in PUNCT if src.startswith(p, i))
            i += len(op)
            kind = "punct"
            if op == "{":
                braces.append("{")
            elif op == "}":
                braces.pop()
        tokens.append(Token(kind, src[start:i], newline, space))
        newline = space = False
    return tokens


def key_positions(tokens):
    """Indices of identifiers that are object keys: `{k: …}`, `{k(…) {…}}` and shorthand `{k}`, and
    method names of class bodies (`class A extends B { m(…) {…} }`); and which of them are shorthand.
    Judged by the innermost open bracket and the neighbouring tokens."""
    keys, shorthand, stack = set(), set(), []
    for index, token in enumerate(tokens):
        if token.kind == "punct" and token.text in "([":
            stack.append(token.text)
        elif token.text == "{" and token.kind == "punct":  # an object literal, a class body ("c"), or a block ("b")
            before = tokens[index - 1] if index else None
            literal = before is not None and ((before.kind == "punct" and before.text in OBJECT_AFTER)
                                              or (before.kind == "id" and before.text == "return"))
            # `class {`, `class A {`, `class A extends B {`: the keyword within the four tokens before.
            body = any(t.kind == "id" and t.text == "class" for t in tokens[max(0, index - 4):index])
            stack.append("{" if literal else "c" if body else "b")
        elif token.kind == "punct" and token.text in ")]}":
            stack.pop()
        elif token.kind == "raw":
            if token.text.endswith("${"):
                stack.append("${")
            if token.text.startswith("}"):
                stack.pop()
        if token.kind != "id" or not stack or index == 0:
            continue
        before, after = tokens[index - 1], tokens[index + 1]
        if stack[-1] == "c":
            # A method of a class: its name after `{`, `}` or `;`.
            if before.kind == "punct" and before.text in "{};" and is_method(tokens, index):
                keys.add(index)
            continue
        if stack[-1] != "{":
            continue
        if before.kind != "punct" or before.text not in "{,":
            continue
        if after.text == ":":
            keys.add(index)
        elif after.text in ",}" and after.kind == "punct":
            keys.add(index)
            shorthand.add(index)
        elif is_method(tokens, index):
            keys.add(index)
    return keys, shorthand


def is_method(tokens, index):
    """Whether the name at `index` starts a method, `name(…) {` (a call would not be followed by `{`)."""
    if tokens[index + 1].text != "(":
        return False
    depth, j = 0, index + 1
    while True:
        depth += {"(": 1, ")": -1}.get(tokens[j].text, 0) if tokens[j].kind == "punct" else 0
        if depth == 0:
            break
        j += 1
    return tokens[j + 1].text == "{"


def short_names(used):
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    for c in letters:
        if c not in used:
            yield c
    for c in letters:
        for d in letters + "0123456789":
            if c + d not in used and c + d not in KEYWORDS:
                yield c + d


def minify(src):
    tokens = tokenize(src)
    keys, shorthand = key_positions(tokens)
    variables = {}
    for index, token in enumerate(tokens):
        if token.kind != "id" or index in keys or token.text in KEYWORDS or token.text in GLOBALS:
            continue
        if index > 0 and tokens[index - 1].text in (".", "?."):
            continue
        variables[token.text] = variables.get(token.text, 0) + 1
    used = {t.text for t in tokens if t.kind == "id"}
    names = short_names(used)
    rename = {}
    for name, _ in sorted(variables.items(), key=lambda item: (-item[1], item[0])):
        if len(name) > 1:
            rename[name] = next(names)

    no_break_after = set("{ ( [ , ; : ? = => && || ?? + - * / % < > <= >= == != === !== += -= *= ! ... .".split())
    no_break_before = set("} ) ] , ; . ?. : ? = => && || ?? * / % < > <= >= == != === !== += -= *=".split())
    out, last = [], None
    for index, token in enumerate(tokens):
        text = token.text
        if token.kind == "id" and text in rename and not (index in keys and index not in shorthand) \
                and not (index > 0 and tokens[index - 1].text in (".", "?.")):
            text = f"{text}:{rename[text]}" if index in shorthand else rename[text]
        if token.kind == "id" and text in ("true", "false") and not (index > 0 and tokens[index - 1].text == "."):
            text = "!0" if text == "true" else "!1"
        if last is not None:
            if token.kind == "com" or last.kind == "com":
                out.append("\n")
            elif token.newline_before and last.text not in no_break_after and not (
                    token.kind == "punct" and token.text in no_break_before):
                out.append("\n")
            elif token.space_before and (
                    (re.match(r"[\w$]", out[-1][-1]) and re.match(r"[\w$`'\"]", text[0]))
                    or (out[-1][-1] in "+-" and text[0] in "+-")
                    or (out[-1][-1] == "/" and text[0] in "/*")):
                out.append(" ")
        out.append(text)
        last = token
    return "".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(prog="python3 -m livelist_tools.minify", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when a built script is not the current build; write nothing")
    check = parser.parse_args().check
    for source, target in BUILDS:
        built = minify(source.read_text(encoding="utf-8"))
        if check:
            if not target.exists() or target.read_text(encoding="utf-8") != built:
                print(f"Public/{target.name} is not the build of Public/{source.name}: run python3 -m livelist_tools.minify",
                      file=sys.stderr)
                sys.exit(1)
            continue
        target.write_text(built, encoding="utf-8")
        size = len(gzip.compress(built.encode(), 9))
        print(f"Public/{target.name}: {len(built.encode())} bytes, {size} gzipped")


if __name__ == "__main__":
    main()
