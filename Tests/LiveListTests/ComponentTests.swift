import LiveList
import Testing

@Suite struct ComponentTests {
    @Test func equatableComponentUpdatesOnlyWhenItChanged() {
        let apple = Label(text: "Apple")
        #expect(!apple.shouldContentUpdate(with: Label(text: "Apple")))
        #expect(apple.shouldContentUpdate(with: Label(text: "Pear")))
    }

    @Test func otherComponentAlwaysUpdates() {
        let value = Opaque(value: 1)
        #expect(value.shouldContentUpdate(with: Opaque(value: 1)))
        #expect(value.shouldContentUpdate(with: Opaque(value: 2)))
    }

    @Test func rendersAgainByDefault() {
        #expect(Label(text: "a").shouldRender(next: Label(text: "a")))
        #expect(Opaque(value: 1).shouldRender(next: Opaque(value: 2)))
    }

    @Test func reportsNoVisibilityByDefault() {
        #expect(!Label(text: "a").reportsVisibility)
        #expect(!Opaque(value: 1).reportsVisibility)
        #expect(!Row(id: 1).reportsVisibility)
    }

    @Test func ownRulesReplaceTheDefaults() {
        let current = Versioned(version: 2)
        #expect(current.shouldContentUpdate(with: Versioned(version: 3)))
        #expect(!current.shouldContentUpdate(with: Versioned(version: 1)))
        #expect(!current.shouldRender(next: Versioned(version: 3, isFrozen: true)))
        #expect(current.shouldRender(next: Versioned(version: 3)))
    }

    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    @Test func visibilityCallbacksReachTheComponent() {
        let log = VisibilityLog()
        let tracked = Tracked(log: log)
        #expect(tracked.reportsVisibility)
        tracked.contentWillDisplay()
        tracked.contentWillDisplay()
        tracked.contentDidEndDisplay()
        #expect(log.willDisplay == 2)
        #expect(log.didEndDisplay == 1)
    }
}
