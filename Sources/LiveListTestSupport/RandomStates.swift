import Foundation
public import LiveListHTML

/// A random state of up to 5 sections of up to 8 cells, keys and texts drawn partly from the hostile
/// corpus, and a second state made from it by random edits (or unrelated, identical, or empty).
public func makeStatePair(using random: inout SplitMix64) -> (JSONListState, JSONListState) {
    var counter = 0
    func freshKey() -> String {
        counter += 1
        if Int.random(in: 0 ..< 3, using: &random) == 0 {
            return hostileStrings[Int.random(in: 0 ..< hostileStrings.count, using: &random)] + "#\(counter)"
        }
        return "k\(counter)"
    }
    func text() -> String {
        Int.random(in: 0 ..< 3, using: &random) == 0
            ? hostileStrings[Int.random(in: 0 ..< hostileStrings.count, using: &random)]
            : "t\(Int.random(in: 0 ..< 4, using: &random))"
    }
    func optionalText() -> String? {
        Bool.random(using: &random) ? text() : nil
    }
    func makeCell() -> JSONListState.Cell {
        JSONListState.Cell(id: freshKey(), text: text(), detail: Int.random(in: 0 ..< 4, using: &random) == 0 ? text() : nil)
    }
    let first = JSONListState(sections: (0 ..< Int.random(in: 0 ... 5, using: &random)).map { _ in
        JSONListState.Section(
            id: freshKey(), header: optionalText(), footer: optionalText(),
            cells: (0 ..< Int.random(in: 0 ... 8, using: &random)).map { _ in makeCell() }
        )
    })
    switch random.next() % 12 {
    case 0: return (first, first)
    case 1: return (first, JSONListState(sections: []))
    default: break
    }
    var sections = first.sections.filter { _ in Int.random(in: 0 ..< 5, using: &random) != 0 }
    for _ in 0 ..< Int.random(in: 0 ... 2, using: &random) {
        sections.insert(
            JSONListState.Section(id: freshKey(), header: optionalText(), footer: optionalText(), cells: []),
            at: Int.random(in: 0 ... sections.count, using: &random)
        )
    }
    if Int.random(in: 0 ..< 3, using: &random) == 0 { sections.shuffle(using: &random) }
    for index in sections.indices where Int.random(in: 0 ..< 4, using: &random) == 0 {
        if Bool.random(using: &random) { sections[index].header = optionalText() } else { sections[index].footer = optionalText() }
    }
    var pool = first.sections.flatMap(\.cells).filter { _ in Int.random(in: 0 ..< 4, using: &random) != 0 }
    for index in pool.indices where Int.random(in: 0 ..< 4, using: &random) == 0 {
        pool[index].text = text()
    }
    for _ in 0 ..< Int.random(in: 0 ... 5, using: &random) { pool.append(makeCell()) }
    guard !sections.isEmpty else { return (first, JSONListState(sections: [])) }
    let homes = Dictionary(first.sections.flatMap { section in section.cells.map { ($0.id, section.id) } }, uniquingKeysWith: { a, _ in a })
    for index in sections.indices { sections[index].cells = [] }
    for cell in pool {
        let home = homes[cell.id].flatMap { id in sections.firstIndex { $0.id == id } }
        let index = home.flatMap { Int.random(in: 0 ..< 4, using: &random) == 0 ? nil : $0 }
            ?? Int.random(in: 0 ..< sections.count, using: &random)
        sections[index].cells.append(cell)
    }
    for index in sections.indices where Int.random(in: 0 ..< 3, using: &random) == 0 {
        sections[index].cells.shuffle(using: &random)
    }
    return (first, JSONListState(sections: sections))
}

/// A PUT body for `state`, written with Foundation's JSON encoder (independent of the server's writer).
public func putBody(_ state: JSONListState) throws -> String {
    let sections: [[String: Any]] = state.sections.map { section in
        var object: [String: Any] = ["id": section.id, "cells": section.cells.map { cell -> [String: Any] in
            var object: [String: Any] = ["id": cell.id, "text": cell.text]
            if let detail = cell.detail { object["detail"] = detail }
            return object
        }]
        if let header = section.header { object["header"] = header }
        if let footer = section.footer { object["footer"] = footer }
        return object
    }
    let data = try JSONSerialization.data(withJSONObject: ["sections": sections], options: [.sortedKeys])
    return String(decoding: data, as: UTF8.self)
}

/// A random patch of 1 to 6 operations for `state`: every kind of operation, on cells and sections
/// that exist and on ones that do not (skipped, or inserted), at every kind of position, with texts
/// drawn partly from the hostile corpus. Every operation applies (anchors and sections exist when it
/// runs), so the patch is never refused.
public func makePatch(for state: JSONListState, using random: inout SplitMix64) -> JSONListPatch {
    var document = JSONListDocument(state)
    var operations: [JSONListPatch.Operation] = []
    func text(_ random: inout SplitMix64) -> String {
        Int.random(in: 0 ..< 4, using: &random) == 0
            ? hostileStrings[Int.random(in: 0 ..< hostileStrings.count, using: &random)]
            : "t\(Int.random(in: 0 ..< 5, using: &random))"
    }
    func fresh(_ prefix: String, _ random: inout SplitMix64) -> String {
        "\(prefix)\(Int.random(in: 0 ..< 1_000_000, using: &random))"
    }
    for _ in 0 ..< Int.random(in: 1 ... 6, using: &random) {
        let sections = document.state.sections
        let cells = sections.flatMap { section in section.cells.map { (section: section.id, cell: $0) } }
        func position(in section: String?, excluding: String?, _ random: inout SplitMix64) -> JSONListPatch.Position? {
            let anchors = (sections.first { $0.id == section }?.cells.map(\.id) ?? []).filter { $0 != excluding }
            switch Int.random(in: 0 ..< 5, using: &random) {
            case 0: return nil
            case 1: return .first
            case 2: return .last
            default: return anchors.randomElement(using: &random).map(JSONListPatch.Position.after) ?? .last
            }
        }
        let cell = { (id: String, random: inout SplitMix64) in
            JSONListState.Cell(id: id, text: text(&random), detail: Bool.random(using: &random) ? text(&random) : nil)
        }
        let operation: JSONListPatch.Operation
        let pick = Int.random(in: 0 ..< 12, using: &random)
        if pick < 3, let existing = cells.randomElement(using: &random) {
            // Often the same content again (a no-op), else new content.
            operation = .update(cell: pick == 0 ? existing.cell : cell(existing.cell.id, &random))
        } else if pick < 5, let section = sections.randomElement(using: &random) {
            operation = .upsert(cell: cell(fresh("n", &random), &random), section: section.id,
                                position: position(in: section.id, excluding: nil, &random))
        } else if pick == 5, let existing = cells.randomElement(using: &random) {
            let section = Bool.random(using: &random) ? sections.randomElement(using: &random)?.id : nil
            operation = .upsert(cell: Bool.random(using: &random) ? existing.cell : cell(existing.cell.id, &random), section: section,
                                position: position(in: section ?? existing.section, excluding: existing.cell.id, &random))
        } else if pick < 8, let existing = cells.randomElement(using: &random) {
            operation = .remove(cell: existing.cell.id)
        } else if pick == 8 {
            operation = Bool.random(using: &random) ? .remove(cell: fresh("missing", &random)) : .update(cell: cell(fresh("missing", &random), &random))
        } else if pick == 9 {
            let anchor = sections.randomElement(using: &random)?.id
            operation = .upsertSection(id: fresh("s", &random), header: Bool.random(using: &random) ? text(&random) : nil, footer: nil,
                                       position: [nil, .first, .last, anchor.map(JSONListPatch.Position.after)].randomElement(using: &random)!)
        } else if pick == 10, let section = sections.randomElement(using: &random) {
            let anchor = sections.filter { $0.id != section.id }.randomElement(using: &random)?.id
            operation = .upsertSection(id: section.id, header: Bool.random(using: &random) ? text(&random) : section.header,
                                       footer: Bool.random(using: &random) ? text(&random) : section.footer,
                                       position: [nil, nil, .first, .last, anchor.map(JSONListPatch.Position.after)].randomElement(using: &random)!)
        } else if let section = sections.randomElement(using: &random), Int.random(in: 0 ..< 3, using: &random) == 0 {
            operation = .removeSection(id: section.id)
        } else {
            operation = .removeSection(id: fresh("missing", &random))
        }
        if (try? document.apply(JSONListPatch(operations: [operation]), limits: .unlimited)) != nil {
            operations.append(operation)
        }
    }
    return JSONListPatch(operations: operations)
}
