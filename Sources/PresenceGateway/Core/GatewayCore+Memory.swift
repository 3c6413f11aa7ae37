import MSPresenceEvents
import PresenceDocuments
import SIPStack
import _GatewayInternals

extension GatewayCore {
    /// The inline size (`MemoryLayout` stride, bytes) of each kind of state the core keeps per
    /// subscription, for benchmarks (memory per bridged pair). Strings, arrays and
    /// shared values they refer to are on the heap and not counted here.
    public static var stateLayout: [(name: String, stride: Int)] {
        [
            ("OMAWatch", MemoryLayout<OMAWatch>.stride),
            ("EnterpriseLeg", MemoryLayout<EnterpriseLeg>.stride),
            ("EnterpriseWatch", MemoryLayout<EnterpriseWatch>.stride),
            ("OMALeg", MemoryLayout<OMALeg>.stride),
            ("WatcherIdentity", MemoryLayout<WatcherIdentity>.stride),
            ("NotifierSubscription", MemoryLayout<NotifierSubscription>.stride),
            ("BatchCategorySubscriber", MemoryLayout<BatchCategorySubscriber>.stride),
            ("SubscriberSubscription", MemoryLayout<SubscriberSubscription>.stride),
            ("SIPDialog", MemoryLayout<SIPDialog>.stride),
            // A dialog's peer (its fields shared, on the heap).
            ("DialogPeer", MemoryLayout<DialogPeer>.stride),
            // The enterprise state kept per resource (on the heap, in the document's array).
            ("CategoriesDocument", MemoryLayout<CategoriesDocument>.stride),
            ("Category", MemoryLayout<Category>.stride),
            ("MSState", MemoryLayout<MSState>.stride),
            ("CategoryPayload", MemoryLayout<CategoryPayload>.stride),
            ("MSNote", MemoryLayout<MSNote>.stride),
            ("ContactCard", MemoryLayout<ContactCard>.stride),
            ("CalendarData", MemoryLayout<CalendarData>.stride),
            ("MSServices", MemoryLayout<MSServices>.stride),
            ("MSDevice", MemoryLayout<MSDevice>.stride),
            ("UserProperties", MemoryLayout<UserProperties>.stride),
            ("LegacyInterop", MemoryLayout<LegacyInterop>.stride),
            // A running timer: its runtime key and slot (GatewayRuntime's table and queue).
            ("TimerKey", MemoryLayout<TimerKey>.stride),
            ("TimerSlot", MemoryLayout<TimerSlot>.stride),
        ]
    }
}
