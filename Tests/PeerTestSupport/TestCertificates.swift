/// Test TLS material: a test CA, a server certificate (SAN DNS:gateway.test, CN gateway.test) and a
/// client certificate (SAN DNS:partner.example, CN partner-cn.example), all P-256 keys, valid for
/// 100 years. Generated once with OpenSSL 3.0 as follows and pasted here; the CA key was thrown away.
///
/// ```
/// openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem \
///   -days 36500 -subj "/CN=PresenceGateway Test CA" \
///   -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
/// openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key -out server.csr \
///   -subj "/CN=gateway.test"
/// printf "subjectAltName=DNS:gateway.test\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n" > server.ext
/// openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 36500 -extfile server.ext
/// openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout client.key -out client.csr \
///   -subj "/CN=partner-cn.example"
/// printf "subjectAltName=DNS:partner.example\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth,serverAuth\n" > client.ext
/// openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 36500 -extfile client.ext
/// openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout rogue.key -out rogue.pem \
///   -days 36500 -subj "/CN=rogue.example" -addext "subjectAltName=DNS:rogue.example"
/// ```
///
/// `rogue` is self-signed: no test CA vouches for it.
public enum TestCertificates {
    public static let caCertificate = """
    -----BEGIN CERTIFICATE-----
    MIIBqjCCAVGgAwIBAgIUNYENisDbgGtIS3Fd1k3VyhokpEwwCgYIKoZIzj0EAwIw
    IjEgMB4GA1UEAwwXUHJlc2VuY2VHYXRld2F5IFRlc3QgQ0EwIBcNMjYxMTIyMTgy
    MTQ5WhgPMjEyNjEwMjkxODIxNDlaMCIxIDAeBgNVBAMMF1ByZXNlbmNlR2F0ZXdh
    eSBUZXN0IENBMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE7r+JKZXvrMmtY922
    dNfinD5a61apKzGTElG5JC/dzMbCjIyOXwPPNpZr87fU+kl42+GBh8z+vS/mEgZa
    Hy5OEKNjMGEwHQYDVR0OBBYEFByDO/PQTu7QWeUp/b0A/G+iOpeQMB8GA1UdIwQY
    MBaAFByDO/PQTu7QWeUp/b0A/G+iOpeQMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0P
    AQH/BAQDAgEGMAoGCCqGSM49BAMCA0cAMEQCIGjtRdjowq2dXnrHzgM0SJQ5EfKG
    353wJqXfbwxbg9pFAiB9d8WCKpoHyaKMuNB1gXjZev/Z78FTo/N8XiFVNVdsFA==
    -----END CERTIFICATE-----
    """
    public static let serverCertificate = """
    -----BEGIN CERTIFICATE-----
    MIIB0TCCAXegAwIBAgIUbmnf6dBbzV0Xfr/KmflCLQ/WNpowCgYIKoZIzj0EAwIw
    IjEgMB4GA1UEAwwXUHJlc2VuY2VHYXRld2F5IFRlc3QgQ0EwIBcNMjYxMTIyMTgy
    MTUwWhgPMjEyNjEwMjkxODIxNTBaMBcxFTATBgNVBAMMDGdhdGV3YXkudGVzdDBZ
    MBMGByqGSM49AgEGCCqGSM49AwEHA0IABEcae8/sd4xuEKVgvr29vW/L2MDojdLU
    J0O8YtRmdoZNsbxIss3f7e+fW3VZi5zfsIky1UkMeCf9bqcoUs3oocKjgZMwgZAw
    FwYDVR0RBBAwDoIMZ2F0ZXdheS50ZXN0MAkGA1UdEwQCMAAwCwYDVR0PBAQDAgeA
    MB0GA1UdJQQWMBQGCCsGAQUFBwMBBggrBgEFBQcDAjAdBgNVHQ4EFgQUQXA6KWwt
    5Zx+8IGAkmRNtdVkYRQwHwYDVR0jBBgwFoAUHIM789BO7tBZ5Sn9vQD8b6I6l5Aw
    CgYIKoZIzj0EAwIDSAAwRQIhANHs0ya0qw67lPQe4AhHWbIG9exK3g0acOLRo/z0
    HN5QAiBOGLXCwnP75LNvhR9PGvDLsMxHJAqiKyG9RjrtvCC1eg==
    -----END CERTIFICATE-----
    """
    public static let serverKey = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg1WulLiyz0OmQ+Jvl
    NEYEGGYuz4V3Ch9NWsgb08EBjUShRANCAARHGnvP7HeMbhClYL69vb1vy9jA6I3S
    1CdDvGLUZnaGTbG8SLLN3+3vn1t1WYuc37CJMtVJDHgn/W6nKFLN6KHC
    -----END PRIVATE KEY-----
    """
    public static let clientCertificate = """
    -----BEGIN CERTIFICATE-----
    MIIB2TCCAYCgAwIBAgIUbmnf6dBbzV0Xfr/KmflCLQ/WNpswCgYIKoZIzj0EAwIw
    IjEgMB4GA1UEAwwXUHJlc2VuY2VHYXRld2F5IFRlc3QgQ0EwIBcNMjYxMTIyMTgy
    MTUwWhgPMjEyNjEwMjkxODIxNTBaMB0xGzAZBgNVBAMMEnBhcnRuZXItY24uZXhh
    bXBsZTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABPBnhi7FMW+KsL2xVujNQDgd
    ySOAphrdPsyye6/DvURlTlxeYQg5cBYhDUg6L5Fn+4saSiIxrSDwTExqfPEdsF+j
    gZYwgZMwGgYDVR0RBBMwEYIPcGFydG5lci5leGFtcGxlMAkGA1UdEwQCMAAwCwYD
    VR0PBAQDAgeAMB0GA1UdJQQWMBQGCCsGAQUFBwMCBggrBgEFBQcDATAdBgNVHQ4E
    FgQU6AjboIaua+5IimTAeYTnP1bjYhgwHwYDVR0jBBgwFoAUHIM789BO7tBZ5Sn9
    vQD8b6I6l5AwCgYIKoZIzj0EAwIDRwAwRAIgElFQ7BiXuPWqcX/OoGdsNLOyTAbl
    b7Km3MShvGBpyEUCIF04tPadtJDLYO7Ai8XokIpLdLKinnW7C2GslHqjH13B
    -----END CERTIFICATE-----
    """
    public static let clientKey = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgR244Ak1NLUEjH9+/
    vit+CHqsv++U/xNs2cYcqTP6Be6hRANCAATwZ4YuxTFvirC9sVbozUA4HckjgKYa
    3T7Msnuvw71EZU5cXmEIOXAWIQ1IOi+RZ/uLGkoiMa0g8ExManzxHbBf
    -----END PRIVATE KEY-----
    """
    public static let rogueCertificate = """
    -----BEGIN CERTIFICATE-----
    MIIBojCCAUegAwIBAgIUYWaYyPMMb6SsDfQRUh4/+oHqMJEwCgYIKoZIzj0EAwIw
    GDEWMBQGA1UEAwwNcm9ndWUuZXhhbXBsZTAgFw0yNjExMjIxODQ2MDZaGA8yMTI2
    MTAyOTE4NDYwNlowGDEWMBQGA1UEAwwNcm9ndWUuZXhhbXBsZTBZMBMGByqGSM49
    AgEGCCqGSM49AwEHA0IABF9tp1dRna8UhxnP7KQ5oeA2FYtar44VnuGGU9tJ2IW6
    XjvlnDZ1wpq4Ud7yEkvzdX9+G+MbMdsmiqF2aUjUC8ejbTBrMB0GA1UdDgQWBBTG
    Ue0+WYMEONNAmvC4vS0aiVwpMjAfBgNVHSMEGDAWgBTGUe0+WYMEONNAmvC4vS0a
    iVwpMjAPBgNVHRMBAf8EBTADAQH/MBgGA1UdEQQRMA+CDXJvZ3VlLmV4YW1wbGUw
    CgYIKoZIzj0EAwIDSQAwRgIhAMRqQbfkOLJWum0YN3Wu4T4jZjYzSea4oe0VKIeL
    FiUeAiEAq7xViZ38aG0OJNw3hLlVnUPrM0WfFs+kjTe0RzivKL4=
    -----END CERTIFICATE-----
    """
    public static let rogueKey = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgtcofFgakedre4zeW
    bHgYZuTFt0gJCIiSGxMhueWFSKihRANCAARfbadXUZ2vFIcZz+ykOaHgNhWLWq+O
    FZ7hhlPbSdiFul475Zw2dcKauFHe8hJL83V/fhvjGzHbJoqhdmlI1AvH
    -----END PRIVATE KEY-----
    """
}
