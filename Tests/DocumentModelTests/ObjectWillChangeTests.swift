import DocumentModel
import Testing

/// A class with no @Published property announcing its own changes: a bug had every access of
/// `objectWillChange` make a new publisher, so `send()` reached no subscriber.
struct ObjectWillChangeTests {
    final class Counter: ObservableObject {
        var value = 0
        func increment() {
            objectWillChange.send()
            value += 1
        }
    }

    @Test func aClassWithoutPublishedKeepsOnePublisher() {
        let counter = Counter()
        var announced = 0
        let subscription = counter.objectWillChange.sink { announced += 1 }
        counter.increment()
        counter.increment()
        #expect(announced == 2)
        #expect(counter.objectWillChange === counter.objectWillChange)
        subscription.cancel()
        counter.increment()
        #expect(announced == 2)
    }

    @Test func aNewObjectAtAnOldAddressGetsItsOwnPublisher() {
        var announced = 0
        var subscription: AnyCancellable?
        do {
            let first = Counter()
            subscription = first.objectWillChange.sink { announced += 1 }
        }
        for _ in 0..<100 { Counter().increment() }
        #expect(announced == 0, "a dead object's subscribers hear nothing from objects made later")
        subscription?.cancel()
    }
}
