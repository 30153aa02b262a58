import Markup

extension JSONListDocument {
    /// The patch that takes this state to `target` when both hold the same sections and the same cells
    /// in the same order, and only texts, details, headers or footers differ (nil otherwise): a PUT
    /// that changes a few cells of a large list then costs what those cells cost.
    public func contentPatch(to target: JSONListState) -> JSONListPatch? {
        guard state.sections.count == target.sections.count else { return nil }
        var operations: [JSONListPatch.Operation] = []
        for (old, new) in zip(state.sections, target.sections) {
            guard sameBytes(old.id, new.id), old.cells.count == new.cells.count else { return nil }
            if !sameBytes(old.header, new.header) || !sameBytes(old.footer, new.footer) {
                operations.append(.upsertSection(id: new.id, header: new.header, footer: new.footer, position: nil))
            }
            for (oldCell, newCell) in zip(old.cells, new.cells) {
                guard sameBytes(oldCell.id, newCell.id) else { return nil }
                if !sameBytes(oldCell.text, newCell.text) || !sameBytes(oldCell.detail, newCell.detail) {
                    operations.append(.update(cell: newCell))
                }
            }
        }
        return JSONListPatch(operations: operations)
    }
}

extension JSONListState.Cell {
    /// The cell as the PUT body (and a patch) writes it: `{"id", "text", "detail"}`, an absent detail
    /// left out.
    func write(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("id")
        writer.string(id)
        writer.key("text")
        writer.string(text)
        if let detail {
            writer.key("detail")
            writer.string(detail)
        }
        writer.endObject()
    }
}

extension JSONListState {
    /// The state in the PUT body's format: a PUT of these bytes makes this state again.
    public func encoded() -> [UInt8] {
        var writer = JSONWriter(capacity: 64 * cellCount + 32 * sections.count + 16)
        writer.beginObject()
        writer.key("sections")
        writer.beginArray()
        for section in sections {
            writer.beginObject()
            writer.key("id")
            writer.string(section.id)
            if let header = section.header {
                writer.key("header")
                writer.string(header)
            }
            if let footer = section.footer {
                writer.key("footer")
                writer.string(footer)
            }
            writer.key("cells")
            writer.beginArray()
            for cell in section.cells {
                cell.write(into: &writer)
            }
            writer.endArray()
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.bytes
    }

    /// The state after `patches`, in order (for a store that keeps a list as a body and the patches
    /// after it). Limits are not applied: what was accepted stays.
    public func applying(_ patches: [JSONListPatch]) throws(ListStateError) -> JSONListState {
        var document = JSONListDocument(self)
        for patch in patches {
            _ = try document.apply(patch, limits: .unlimited)
        }
        return document.state
    }
}
