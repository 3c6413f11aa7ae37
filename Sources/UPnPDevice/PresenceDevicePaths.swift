/// The paths the device serves (relative URLs in the device description, UDA 1.1 §2.3).
public enum PresenceDevicePaths {
    public static let description = "/description.xml"
    public static let scpd = "/presence.xml"
    public static let control = "/control/presence"
    public static let event = "/event/presence"
}
