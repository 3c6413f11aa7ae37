public import XMLBridge

/// The data of a category, typed where the gateway understands it.
///
/// The large, rarer payloads are boxed (`indirect`): a contact card is 176 bytes, calendar data
/// 136 and a device 64, and every category of every document, `state` included, would otherwise
/// be that wide. Subscriptions keep their presentities' categories for their whole life
/// (memory per bridged pair).
public enum CategoryPayload: Hashable, Sendable {
    case state(MSState)
    case note(MSNote)
    indirect case contactCard(ContactCard)
    indirect case calendarData(CalendarData)
    case services(MSServices)
    indirect case device(MSDevice)
    case userProperties(UserProperties)
    case legacyInterop(LegacyInterop)
    /// Any other category (or an unexpected root), kept verbatim: all child
    /// nodes of the `category` element except white-space-only text nodes
    /// (indentation; dropped at every depth so that values survive re-indenting).
    case other([XMLNode])
}
