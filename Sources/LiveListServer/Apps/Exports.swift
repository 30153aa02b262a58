// An app that imports LiveListServer gets the list model and the HTML DSL too (Component, Section,
// CellNode, HTMLAdapter, UpdaterOptions, `div`, `button`…), so that it imports one module.
@_exported public import LiveListHTML
