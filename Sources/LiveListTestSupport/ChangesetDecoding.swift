public import LiveListHTML

/// Reads a changeset back from its JSON with the strict parser: every field must be present with the
/// right type (null where empty), and no other field may appear. Proves the encoder writes the format
/// of docs/PROTOCOL.md.
public func decodeChangeset(_ bytes: [UInt8]) throws -> ListChangeset {
    let value = try JSONValue.parse(bytes)
    let top = try fields(value, ["protocol", "list", "from", "version", "animate", "ops"])
    guard case .number("1") = top["protocol"] else { throw ModelError("protocol is not 1") }
    guard case let .array(ops) = top["ops"] else { throw ModelError("ops is not an array") }
    return ListChangeset(
        list: try string(top["list"]),
        from: try int(top["from"]),
        version: try int(top["version"]),
        animate: try bool(top["animate"]),
        operations: try ops.map(decodeOperation)
    )
}

public func decodeOperation(_ value: JSONValue) throws -> PatchOperation {
    guard case let .object(members) = value, let op = members.first(where: { $0.key == "op" })?.value,
          case let .string(name) = op else { throw ModelError("operation without op") }
    switch name {
    case "deleteSection":
        let f = try fields(value, ["op", "section"])
        return .deleteSection(section: try string(f["section"]))
    case "insertSection":
        let f = try fields(value, ["op", "section", "after", "html", "header", "footer"])
        return .insertSection(section: try string(f["section"]), after: try optionalString(f["after"]),
                              html: try string(f["html"]), header: try optionalString(f["header"]),
                              footer: try optionalString(f["footer"]))
    case "moveSection":
        let f = try fields(value, ["op", "section", "after"])
        return .moveSection(section: try string(f["section"]), after: try optionalString(f["after"]))
    case "reloadSection":
        let f = try fields(value, ["op", "section", "header", "footer"])
        return .reloadSection(section: try string(f["section"]), header: try optionalString(f["header"]),
                              footer: try optionalString(f["footer"]))
    case "delete":
        let f = try fields(value, ["op", "cell"])
        return .delete(cell: try string(f["cell"]))
    case "insert":
        let f = try fields(value, ["op", "cell", "section", "after", "html"])
        return .insert(cell: try string(f["cell"]), section: try string(f["section"]),
                       after: try optionalString(f["after"]), html: try string(f["html"]))
    case "move":
        let f = try fields(value, ["op", "cell", "section", "after"])
        return .move(cell: try string(f["cell"]), section: try string(f["section"]), after: try optionalString(f["after"]))
    case "reload":
        let f = try fields(value, ["op", "cell", "html"])
        return .reload(cell: try string(f["cell"]), html: try string(f["html"]))
    case "reset":
        let f = try fields(value, ["op", "html", "sections"])
        guard case let .array(sections) = f["sections"] else { throw ModelError("reset sections") }
        let rendered = try sections.map { section -> RenderedSection in
            let s = try fields(section, ["key", "html", "header", "footer", "cells"])
            guard case let .array(cells) = s["cells"] else { throw ModelError("cells") }
            let model = try ListModel.Section(
                key: try string(s["key"]), html: try string(s["html"]), header: try optionalString(s["header"]),
                footer: try optionalString(s["footer"]), cells: try cells.map { cell in
                    let c = try fields(cell, ["key", "html"])
                    return RenderedCell(key: try string(c["key"]), html: try string(c["html"]))
                })
            // The JSON has the cell-less html only; split it so that opening + closing is that html.
            return RenderedSection(key: model.key, opening: model.start + (model.header ?? "") + model.middle,
                                   closing: (model.footer ?? "") + model.end, header: model.header, footer: model.footer,
                                   cells: model.cells)
        }
        return .reset(html: try string(f["html"]), sections: rendered)
    default:
        throw ModelError("unknown op \(name)")
    }
}

private func fields(_ value: JSONValue, _ names: [String]) throws -> [String: JSONValue] {
    guard case let .object(members) = value else { throw ModelError("not an object") }
    guard members.map(\.key) == names else { throw ModelError("fields \(members.map(\.key)), expected \(names)") }
    return Dictionary(uniqueKeysWithValues: members.map { ($0.key, $0.value) })
}

private func string(_ value: JSONValue?) throws -> String {
    guard case let .string(string) = value else { throw ModelError("expected a string, got \(String(describing: value))") }
    return string
}

private func optionalString(_ value: JSONValue?) throws -> String? {
    if case .null = value { return nil }
    return try string(value)
}

private func int(_ value: JSONValue?) throws -> Int {
    guard case let .number(text) = value, let number = Int(text) else { throw ModelError("expected an integer") }
    return number
}

private func bool(_ value: JSONValue?) throws -> Bool {
    guard case let .bool(flag) = value else { throw ModelError("expected a boolean") }
    return flag
}

/// Reads a snapshot back from its JSON (the `state` member is ignored).
public func decodeSnapshot(_ bytes: [UInt8]) throws -> (version: Int, model: ListModel) {
    guard case let .object(members) = try JSONValue.parse(bytes) else { throw ModelError("snapshot is not an object") }
    let fields = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
    guard case let .number(versionText) = fields["version"], let version = Int(versionText),
          case let .array(sections) = fields["sections"] else { throw ModelError("snapshot without version or sections") }
    var model = try ListModel(RenderedList())
    guard case let .reset(_, rendered) = try decodeOperation(.object([("op", .string("reset")), ("html", .string("")), ("sections", .array(sections))])) else {
        throw ModelError("cannot read sections")
    }
    model = try ListModel(RenderedList(sections: rendered))
    return (version, model)
}
