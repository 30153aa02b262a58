package import LiveList
import Markup

extension PatchUpdater {
    /// Applies what a JSON list's patch changed (``JSONListDocument/Applied/effects``) to the rendering
    /// and to `data` (the renderer's sections) in place, rendering only the cells and sections it names,
    /// and returns the changeset (nil when the page would not change). No diff of the whole list: the
    /// cost follows the effects. The operations apply in the effects' order, each anchor naming an
    /// element of the state the ones before it left.
    ///
    /// With `updatingData` false, `data` is left as it was (stale): for an owner that rebuilds it from
    /// its own state before it next needs it, so that a patch does not move every cell of `data` too.
    package mutating func apply(
        _ effects: [JSONListDocument.Effect], adapter: HTMLAdapter, data: inout [LiveList.Section], updatingData: Bool = true
    ) throws(RenderError) -> ListChangeset? {
        var operations: [PatchOperation] = []
        for effect in effects {
            switch effect {
            case let .cellChanged(section, position, cell):
                let node = cell.node
                let rendered = try adapter.renderCell(node)
                if updatingData { data[section].cells[position] = node }
                if !sameBytes(rendered.html, state.rendering.sections[section].cells[position].html) {
                    operations.append(.reload(cell: rendered.key, html: rendered.html))
                    state.rendering.sections[section].cells[position] = rendered
                }
            case let .cellInserted(section, position, cell):
                let node = cell.node
                let rendered = try adapter.renderCell(node)
                if updatingData { data[section].cells.insert(node, at: position) }
                let after = position > 0 ? state.rendering.sections[section].cells[position - 1].key : nil
                state.rendering.sections[section].cells.insert(rendered, at: position)
                operations.append(.insert(cell: rendered.key, section: state.rendering.sections[section].key, after: after, html: rendered.html))
            case let .cellRemoved(section, position):
                if updatingData { data[section].cells.remove(at: position) }
                let removed = state.rendering.sections[section].cells.remove(at: position)
                operations.append(.delete(cell: removed.key))
            case let .cellMoved(from, to, cell):
                let node = cell.node
                if updatingData {
                    data[from.section].cells.remove(at: from.position)
                    data[to.section].cells.insert(node, at: to.position)
                }
                let old = state.rendering.sections[from.section].cells.remove(at: from.position)
                let after = to.position > 0 ? state.rendering.sections[to.section].cells[to.position - 1].key : nil
                operations.append(.move(cell: old.key, section: state.rendering.sections[to.section].key, after: after))
                let rendered = try adapter.renderCell(node)
                if !sameBytes(rendered.html, old.html) {
                    operations.append(.reload(cell: rendered.key, html: rendered.html))
                }
                state.rendering.sections[to.section].cells.insert(rendered, at: to.position)
            case let .sectionInserted(index, section):
                let node = section.node(cells: [])
                let shell = try adapter.renderSection(node, cells: [])
                let after = index > 0 ? state.rendering.sections[index - 1].key : nil
                if updatingData { data.insert(node, at: index) }
                state.rendering.sections.insert(shell, at: index)
                operations.append(.insertSection(section: shell.key, after: after, html: shell.html, header: shell.header, footer: shell.footer))
            case let .sectionChanged(index, header, footer):
                let key = state.rendering.sections[index].key
                let node = JSONListState.Section(id: key, header: header, footer: footer, cells: []).node(cells: updatingData ? data[index].cells : [])
                if updatingData { data[index] = node }
                let shell = try adapter.renderSection(node, cells: [])
                let rendered = state.rendering.sections[index]
                if !sameBytes(shell.header, rendered.header) || !sameBytes(shell.footer, rendered.footer) {
                    operations.append(.reloadSection(section: shell.key, header: shell.header, footer: shell.footer))
                    state.rendering.sections[index].opening = shell.opening
                    state.rendering.sections[index].closing = shell.closing
                    state.rendering.sections[index].header = shell.header
                    state.rendering.sections[index].footer = shell.footer
                }
            case let .sectionRemoved(index):
                if updatingData { data.remove(at: index) }
                let removed = state.rendering.sections.remove(at: index)
                operations.append(.deleteSection(section: removed.key))
            case let .sectionMoved(from, to):
                if updatingData { data.insert(data.remove(at: from), at: to) }
                let moved = state.rendering.sections.remove(at: from)
                let after = to > 0 ? state.rendering.sections[to - 1].key : nil
                state.rendering.sections.insert(moved, at: to)
                operations.append(.moveSection(section: moved.key, after: after))
            }
        }
        guard !operations.isEmpty else { return nil }
        let from = state.advanceInPlace()
        return ListChangeset(list: list, from: from, version: version, animate: options.animates(operationCount: operations.count),
                             operations: operations)
    }
}
