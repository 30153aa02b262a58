import Foundation
@testable import LiveListHTML
import LiveListTestSupport
import Testing

/// The PATCH body, the indexed document it applies to, and the direct reader of PUT bodies.
@Suite struct JSONListPatchTests {
    @Test func aPatchRoundTripsThroughItsEncoding() throws {
        let patch = JSONListPatch(operations: [
            .upsert(cell: .init(id: "a", text: "A \"q\"", detail: "d"), section: "s", position: .after("b")),
            .upsert(cell: .init(id: "c", text: "C"), section: nil, position: nil),
            .update(cell: .init(id: "x", text: "X")),
            .remove(cell: "é"),
            .upsertSection(id: "t", header: "H", footer: nil, position: .first),
            .upsertSection(id: "u", header: nil, footer: "F", position: .last),
            .removeSection(id: "v"),
        ])
        #expect(try JSONListPatch.decode(patch.encoded()) == patch)
    }

    @Test(arguments: [
        (#"{"op": []}"#, "unknown_field", "body.\"op\""),
        (#"{"ops": {}}"#, "invalid_type", "ops: expected an array"),
        (#"{"ops": [{"op": "update"}]}"#, "missing_field", "ops[0].cell: missing"),
        (#"{"ops": [{"op": "remove", "cell": "a"}, {"op": "frob"}]}"#, "unknown_operation", "ops[1].op"),
        (#"{"ops": [{"cell": "a"}]}"#, "missing_field", "ops[0].op: missing"),
        (#"{"ops": [{"op": "upsert", "cell": {"id": "a", "text": 1}}]}"#, "invalid_type", "ops[0].cell.text"),
        (#"{"ops": [{"op": "upsert", "cell": {"id": "a\u0000", "text": "t"}}]}"#, "invalid_key", "ops[0].cell.id"),
        (#"{"ops": [{"op": "upsert", "cell": {"id": "a", "text": "t"}, "position": "middle"}]}"#, "invalid_position", "ops[0].position"),
        (#"{"ops": [{"op": "upsertSection", "section": {"id": "s", "cells": []}}]}"#, "unknown_field", "ops[0].section.\"cells\""),
    ])
    func badOperationsAreNamedByIndex(body: String, code: String, detail: String) {
        #expect {
            _ = try JSONListPatch.decode(Array(body.utf8))
        } throws: { error in
            guard let error = error as? ListStateError else { return false }
            return error.code == code && error.detail.contains(detail)
        }
    }

    @Test func aRefusedPatchLeavesTheDocumentAsItWas() throws {
        let state = JSONListState(sections: [.init(id: "s", cells: [.init(id: "a", text: "a"), .init(id: "b", text: "b")])])
        var document = JSONListDocument(state)
        let patch = JSONListPatch(operations: [
            .update(cell: .init(id: "a", text: "A")),
            .remove(cell: "b"),
            .upsertSection(id: "t", header: nil, footer: nil, position: nil),
            .upsert(cell: .init(id: "c", text: "c"), section: "nope", position: nil),
        ])
        #expect(throws: ListStateError.self) { _ = try document.apply(patch, limits: JSONListLimits()) }
        #expect(document.state == state)
        // The index still finds every cell.
        let next = try document.apply(JSONListPatch(operations: [.upsert(cell: .init(id: "c", text: "c"), section: "s", position: .after("a"))]), limits: JSONListLimits())
        #expect(next.changed && document.state.sections[0].cells.map(\.id) == ["a", "c", "b"])
    }

    @Test func aMoveToAnotherSectionAfterAMissingAnchorIsRefusedWhole() throws {
        let state = JSONListState(sections: [.init(id: "s", cells: [.init(id: "a", text: "a")]), .init(id: "t", cells: [.init(id: "b", text: "b")])])
        var document = JSONListDocument(state)
        let patch = JSONListPatch(operations: [.upsert(cell: .init(id: "a", text: "a"), section: "t", position: .after("nope"))])
        #expect {
            _ = try document.apply(patch, limits: JSONListLimits())
        } throws: { error in
            (error as? ListStateError)?.code == "unknown_anchor" && (error as? ListStateError)?.detail.contains("ops[0].position.after") == true
        }
        #expect(document.state == state)
    }

    /// Many structural changes to one document, whose index shifts and rebuilds, against a document
    /// built anew from the same state before each patch.
    @Test func theIndexAgreesWithAFreshDocumentThroughLongSequences() throws {
        let seed = UInt64.random(in: 0 ... .max)
        print("JSONListPatchTests index seed \(seed)")
        var random = SplitMix64(seed: seed)
        let cells = (0 ..< 300).map { JSONListState.Cell(id: "c\($0)", text: "t") }
        var document = JSONListDocument(JSONListState(sections: [.init(id: "s0", cells: cells), .init(id: "s1", cells: [])]))
        for step in 0 ..< 1_500 {
            let patch = makePatch(for: document.state, using: &random)
            var fresh = JSONListDocument(document.state)
            let expected = try fresh.apply(patch, limits: .unlimited)
            let applied = try document.apply(patch, limits: .unlimited)
            #expect(document.state == fresh.state, "seed \(seed), step \(step)")
            #expect(applied.effective == expected.effective && applied.skipped == expected.skipped, "seed \(seed), step \(step)")
            if document.state != fresh.state { break }
        }
    }

    /// The direct reader of PUT bodies reads what the general decoder reads, and leaves to it every
    /// body it refuses.
    @Test func theDirectReaderAgreesWithTheGeneralDecoder() throws {
        let seed = UInt64.random(in: 0 ... .max)
        print("JSONListPatchTests reader seed \(seed)")
        var random = SplitMix64(seed: seed)
        for _ in 0 ..< 300 {
            let (state, _) = makeStatePair(using: &random)
            let body = Array(try putBody(state).utf8)
            let direct = try #require(JSONParser.listState(body, limits: JSONListLimits()), "seed \(seed): \(String(decoding: body, as: UTF8.self))")
            #expect(direct == state, "seed \(seed)")
            #expect(JSONParser.listState(state.encoded(), limits: JSONListLimits()) == state)
        }
        let refused = [
            #"{"sections": [{"id": "s", "cells": [{"id": "a", "text": "a"}, {"id": "a", "text": "b"}]}]}"#,
            #"{"sections": [{"id": "s", "cells": [], "extra": 1}]}"#,
            #"{"sections": [{"id": "s", "id": "t", "cells": []}]}"#,
            #"{"sections": [{"id": "s", "cells": [{"id": "a"}]}]}"#,
            #"{"sections": []} x"#,
            #"{"sections": [{"id": "s\u0000", "cells": []}]}"#,
            #"{"sections": [{"id": 1, "cells": []}]}"#,
        ]
        for body in refused {
            #expect(JSONParser.listState(Array(body.utf8), limits: JSONListLimits()) == nil, "\(body)")
            #expect(throws: ListStateError.self, "\(body)") { _ = try JSONListState.decode(Array(body.utf8)) }
        }
        // Left unchecked, a repeated id is found by `duplicateID()`, worded as the decoder words it.
        for body in [#"{"sections": [{"id": "s", "cells": [{"id": "a", "text": "a"}, {"id": "b", "text": "b"}, {"id": "a", "text": "c"}]}]}"#,
                     #"{"sections": [{"id": "s", "cells": []}, {"id": "t", "cells": [{"id": "s", "text": "s"}]}, {"id": "s", "cells": []}]}"#] {
            let (state, checked) = try JSONListState.decodeForPut(Array(body.utf8), limits: JSONListLimits())
            #expect(!checked)
            #expect {
                _ = try JSONListState.decode(Array(body.utf8))
            } throws: { error in
                (error as? ListStateError) == state.duplicateID()
            }
        }
        #expect(JSONParser.listState(Array(#"{"sections": [{"id": "s", "cells": [{"id": "a", "text": "a"}]}]}"#.utf8),
                                     limits: JSONListLimits(maximumCells: 0)) == nil)
    }
}
