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
