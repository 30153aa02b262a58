/// Strings that try to break out of text, attributes and the JSON they travel in.
public let hostileStrings: [String] = [
    "<script>alert(1)</script>", "</li><li data-cell=\"x\">", "\"><img src=x onerror=alert(1)>", "it's",
    "a \"quoted\" key", "&amp;", "&lt;b&gt;", "line\nbreak", "tab\there", "cr\rhere", "👋🏽", "👨‍👩‍👧",
    " spaced ", "\\backslash\\", "\u{2028}sep\u{2029}", "é", "e\u{301}", "1", "null", "{\"op\":\"reset\"}",
    "<!--", "]]>", "\u{7F}del", "\u{1}ctl",
]
