import LiveListHTML
import LiveListTestSupport
import Testing

private func decode(_ text: String, limits: JSONListLimits = JSONListLimits()) throws(ListStateError) -> JSONListState {
    try JSONListState.decode(Array(text.utf8), limits: limits)
}

@Suite struct JSONListStateTests {
    @Test func decodesAFullState() throws {
        let state = try decode("""
            {"sections": [{"id": "a", "header": "Groceries", "footer": null,
              "cells": [{"id": "x", "text": "Milk", "detail": "2 l"}, {"id": "y", "text": "Eggs"}]},
              {"id": "b", "cells": []}]}
            """)
        #expect(state == JSONListState(sections: [
            .init(id: "a", header: "Groceries", footer: nil, cells: [.init(id: "x", text: "Milk", detail: "2 l"), .init(id: "y", text: "Eggs")]),
            .init(id: "b", cells: []),
        ]))
    }

    @Test(arguments: [
        (#"{"sections": [}"#, "malformed_json", 400, "at byte 14: unexpected character"),
        (#"{"sections": []} x"#, "malformed_json", 400, "at byte 17: unexpected data after the JSON value"),
        (#"{"sections": [], "sections": []}"#, "malformed_json", 400, #"at byte 17: repeated member name "sections""#),
        (#"[]"#, "invalid_type", 422, "body: expected an object, got an array"),
        (#"{}"#, "missing_field", 422, "sections: missing"),
        (#"{"sections": {}}"#, "invalid_type", 422, "sections: expected an array, got an object"),
        (#"{"sections": [], "extra": 1}"#, "unknown_field", 422, #"body."extra": unknown field (expected sections)"#),
        (#"{"sections": [{"cells": []}]}"#, "missing_field", 422, "sections[0].id: missing"),
        (#"{"sections": [{"id": 1, "cells": []}]}"#, "invalid_type", 422, "sections[0].id: expected a string, got a number"),
        (#"{"sections": [{"id": "a"}]}"#, "missing_field", 422, "sections[0].cells: missing"),
        (#"{"sections": [{"id": "a", "cells": [], "colour": "red"}]}"#, "unknown_field", 422,
         #"sections[0]."colour": unknown field (expected cells, footer, header, id)"#),
        (#"{"sections": [{"id": "a", "cells": []}, {"id": "a", "cells": []}]}"#, "duplicate_key", 422, #"sections[1].id: duplicate "a""#),
        (#"{"sections": [{"id": "a", "cells": [{"id": "x"}]}]}"#, "missing_field", 422, "sections[0].cells[0].text: missing"),
        (#"{"sections": [{"id": "a", "cells": [{"id": "x", "text": null}]}]}"#, "invalid_type", 422,
         "sections[0].cells[0].text: expected a string, got null"),
        (#"{"sections": [{"id": "a", "cells": [{"id": "x", "text": "t"}]}, {"id": "b", "cells": [{"id": "y", "text": "t"}, {"id": "x", "text": "u"}]}]}"#,
         "duplicate_key", 422, #"sections[1].cells[1].id: duplicate "x""#),
        (#"{"sections": [{"id": "a\u0000", "cells": []}]}"#, "invalid_key", 422, #"sections[0].id: "a\u0000" contains NUL"#),
        (#"{"sections": [{"id": "a", "header": 5, "cells": []}]}"#, "invalid_type", 422, "sections[0].header: expected a string, got a number"),
        (#"{"sections": [{"id": "a", "cells": [{"id": "x", "text": "t", "detail": []}]}]}"#, "invalid_type", 422,
         "sections[0].cells[0].detail: expected a string, got an array"),
        (#"{"sections": [{"id": "\ud800", "cells": []}]}"#, "malformed_json", 400, "at byte 22: lone high surrogate"),
    ])
    func refusesWithCodeAndPath(body: String, code: String, status: Int, detail: String) {
        #expect(throws: ListStateError(code: code, detail: detail, isMalformedJSON: status == 400)) {
            try decode(body)
        }
    }

    @Test func keysDifferingOnlyInNormalisationAreDistinct() throws {
        let state = try decode(#"{"sections": [{"id": "s", "cells": [{"id": "\u00e9", "text": ""}, {"id": "e\u0301", "text": ""}]}]}"#)
        #expect(state.cellCount == 2)
    }

    @Test func limitsAreEnforcedWithClearErrors() {
        let limits = JSONListLimits(maximumSections: 1, maximumCells: 2, maximumIDLength: 3, maximumTextLength: 4)
        #expect(throws: ListStateError(code: "too_many_sections", detail: "sections: 2 sections, more than the limit of 1")) {
            try decode(#"{"sections": [{"id": "a", "cells": []}, {"id": "b", "cells": []}]}"#, limits: limits)
        }
        #expect(throws: ListStateError(code: "too_many_cells", detail: "sections[0].cells: the list has more than the limit of 2 cells")) {
            try decode(#"{"sections": [{"id": "a", "cells": [{"id": "1", "text": ""}, {"id": "2", "text": ""}, {"id": "3", "text": ""}]}]}"#, limits: limits)
        }
        #expect(throws: ListStateError(code: "too_long", detail: "sections[0].id: 4 bytes, more than the limit of 3")) {
            try decode(#"{"sections": [{"id": "abcd", "cells": []}]}"#, limits: limits)
        }
        #expect(throws: ListStateError(code: "too_long", detail: "sections[0].cells[0].text: 5 bytes, more than the limit of 4")) {
            try decode(#"{"sections": [{"id": "a", "cells": [{"id": "1", "text": "12345"}]}]}"#, limits: limits)
        }
    }

    @Test func deepNestingIsRefusedWithoutRecursingForever() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: ListStateError.self) { try decode(deep) }
    }

    @Test func snapshotCarriesTheExactPutBody() throws {
        let body = #"{"sections": [{"id": "a", "cells": [{"id": "x", "text": "Milk"}]}]}"#
        let state = try decode(body)
        let renderer = Renderer(adapter: HTMLAdapter(), updater: PatchUpdater(list: "g"))
        try renderer.render(state.listSections)
        var snapshot = renderer.updater.snapshot
        snapshot.state = Array(body.utf8)
        let json = String(decoding: snapshot.encodedJSON(), as: UTF8.self)
        #expect(json.hasPrefix(#"{"protocol":1,"list":"g","version":1,"sections":[{"key":"a","html":"#))
        #expect(json.hasSuffix(#","state":"# + body + "}"))
    }
}

@Suite struct JSONWriterTests {
    @Test func stringsAreEscapedOntoOneLine() {
        let changeset = ListChangeset(list: "l\"\\\n\u{1}\u{2028}\u{2029}é", from: 0, version: 1, animate: true, operations: [])
        let json = String(decoding: changeset.encodedJSON(), as: UTF8.self)
        #expect(json.contains(#""list":"l\"\\\n\u0001\u2028\u2029é""#))
    }
}
