import LiveList
import Testing

@Suite struct ViewNodeTests {
    @Test func holdsItsComponent() {
        let node = ViewNode(Header("Fruits"))
        #expect(node.component(as: Header.self) == Header("Fruits"))
        #expect(node.component(as: Footer.self) == nil)
    }

    @Test func doesNotNestNodes() {
        let node = ViewNode(ViewNode(AnyComponent(Header("A"))))
        #expect(node.component.base is Header)
    }

    @Test func comparesContentAsCellsDo() {
        let previous = ViewNode(Versioned(version: 1))
        #expect(!ViewNode(Versioned(version: 2)).isContentEqual(to: previous))
        #expect(ViewNode(Versioned(version: 1)).isContentEqual(to: previous))
        #expect(ViewNode(Header("A")).isContentEqual(to: ViewNode(Header("A"))))
        #expect(!ViewNode(Header("A")).isContentEqual(to: ViewNode(Header("B"))))
    }

    @Test func behavesAsItsComponent() {
        let node = ViewNode(Versioned(version: 1))
        #expect(node.shouldContentUpdate(with: ViewNode(Versioned(version: 2))))
        #expect(!node.shouldRender(next: ViewNode(Versioned(version: 2, isFrozen: true))))
        #expect(!node.reportsVisibility)
    }
}
