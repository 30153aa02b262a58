import LiveList
import Testing

@Suite struct AnyComponentTests {
    @Test func castsToItsBaseType() {
        let erased = AnyComponent(Label(text: "Apple"))
        #expect(erased.as(Label.self) == Label(text: "Apple"))
        #expect(erased.as(Opaque.self) == nil)
        #expect(erased.base is Label)
    }

    @Test func castsThroughWrappers() {
        let erased = AnyComponent(Label(text: "Apple").identified(by: 1).identified(by: "outer"))
        #expect(erased.as(Label.self)?.text == "Apple")
        #expect(erased.as(IdentifiedComponentWrapper<Int, Label>.self)?.id == 1)
        typealias Outer = IdentifiedComponentWrapper<String, IdentifiedComponentWrapper<Int, Label>>
        #expect(erased.as(Outer.self)?.id == "outer")
        #expect(erased.as(Header.self) == nil)
    }

    @Test func doesNotNestErasedComponentsOrNodes() {
        let twice = AnyComponent(AnyComponent(Label(text: "a")))
        #expect(twice.base is Label)
        let fromNode = AnyComponent(ViewNode(Header("H")))
        #expect(fromNode.base is Header)
    }

    @Test func componentsOfDifferentTypesAlwaysUpdate() {
        let label = AnyComponent(Label(text: "a"))
        #expect(label.shouldContentUpdate(with: AnyComponent(Header("a"))))
        #expect(label.shouldRender(next: AnyComponent(Header("a"))))
    }

    @Test func componentsOfOneTypeAskTheBase() {
        let label = AnyComponent(Label(text: "a"))
        #expect(!label.shouldContentUpdate(with: AnyComponent(Label(text: "a"))))
        #expect(label.shouldContentUpdate(with: AnyComponent(Label(text: "b"))))

        let versioned = AnyComponent(Versioned(version: 5))
        #expect(!versioned.shouldContentUpdate(with: AnyComponent(Versioned(version: 4))))
        #expect(versioned.shouldContentUpdate(with: AnyComponent(Versioned(version: 6))))
        #expect(!versioned.shouldRender(next: AnyComponent(Versioned(version: 6, isFrozen: true))))
    }

    @Test func forwardsVisibilityFlag() {
        #expect(!AnyComponent(Label(text: "a")).reportsVisibility)
    }

    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    @Test func forwardsVisibilityCallbacks() {
        let log = VisibilityLog()
        let erased = AnyComponent(Tracked(log: log))
        #expect(erased.reportsVisibility)
        erased.contentWillDisplay()
        erased.contentDidEndDisplay()
        erased.contentDidEndDisplay()
        #expect(log.willDisplay == 1)
        #expect(log.didEndDisplay == 2)
    }

    @Test func debugDescriptionNamesTheBase() {
        #expect(String(reflecting: AnyComponent(Header("A"))).hasPrefix("AnyComponent("))
        #expect(String(reflecting: AnyComponent(Header("A"))).contains("Header"))
    }
}
