public import XMLBridge

/// A `text/xml+msrtc.pidf` presentity document ([MS-PRES] §2.2.2.9.2, the
/// Appendix D aggregate extension; base schema in [MS-SIP] §6).
///
/// ```
/// <presentity uri="bob@contoso.com" xmlns="http://schemas.microsoft.com/2002/09/sip/presence">
///   <availability aggregate="300"/> <activity aggregate="600"/>
///   <displayName displayName="Bob"/> <email email="..."/> <phoneNumber number="..."/>
///   <aggregate><states><state avail="6500" xsi:type="userState">busy</state></states></aggregate>
/// </presentity>
/// ```
public struct MSRTCPresentity: Hashable, Sendable {
    /// The presentity, written without `sip:` in every spec example.
    public var uri: String
    public var availabilityAggregate: UInt32?
    public var activityAggregate: UInt32?
    public var displayName: String?
    public var email: String?
    public var phoneNumber: String?
    public var states: [AggregateState]
    /// Elements not modelled above, kept verbatim.
    public var extensions: [XMLElement]

    /// `aggregate/states/state` (Appendix D): `avail` and the activity text.
    public struct AggregateState: Hashable, Sendable {
        public var avail: UInt32?
        /// The xsi:type (userState in every example).
        public var type: String?
        /// online, busy, do-not-disturb, be-right-back, away, offline (schema §9),
        /// or an enhanced-presence token (the §3.7.5.5 table says "Any").
        public var text: String
        public init(avail: UInt32?, type: String? = "userState", text: String) {
            self.avail = avail
            self.type = type
            self.text = text
        }
    }

    public init(
        uri: String, availabilityAggregate: UInt32? = nil, activityAggregate: UInt32? = nil,
        displayName: String? = nil, email: String? = nil, phoneNumber: String? = nil,
        states: [AggregateState] = [], extensions: [XMLElement] = []
    ) {
        self.uri = uri
        self.availabilityAggregate = availabilityAggregate
        self.activityAggregate = activityAggregate
        self.displayName = displayName
        self.email = email
        self.phoneNumber = phoneNumber
        self.states = states
        self.extensions = extensions
    }
}
