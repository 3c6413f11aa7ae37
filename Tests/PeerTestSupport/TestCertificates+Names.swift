/// Certificates for checking the names the gateway's own TLS connections accept (RFC 5922 §4,
/// RFC 6125 §6.4): issued by a second test CA, P-256 keys, valid for 100 years. Generated once
/// with OpenSSL 3.0 as follows and pasted here; the CA key was thrown away.
///
/// ```
/// C="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
/// openssl req -x509 $C -keyout ca2.key -out ca2.pem -days 36500 -subj "/CN=PresenceGateway Test CA 2" \
///   -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
/// mk() {  # name, subject CN, subjectAltName
///   openssl req $C -keyout $1.key -out $1.csr -subj "/CN=$2"
///   printf "subjectAltName=$3\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n" > $1.ext
///   openssl x509 -req -in $1.csr -CA ca2.pem -CAkey ca2.key -CAcreateserial -out $1.pem -days 36500 -extfile $1.ext
/// }
/// mk edge edge.contoso.com "DNS:edge.contoso.com"              # the genuine edge: a name, no IP
/// mk evil evil.example "DNS:evil.example,IP:127.0.0.1"         # another name, with the edge's IP
/// mk wildcard "*.fabrikam.com" "DNS:*.fabrikam.com"
/// ```
extension TestCertificates {
    /// Both test CAs, as one PEM trust store.
    public static var bothCAs: String { caCertificate + "\n" + secondCACertificate }

    public static let secondCACertificate = """
    -----BEGIN CERTIFICATE-----
    MIIBrzCCAVWgAwIBAgIUME6FlcKckvMrKYK7fmCvnQldOWcwCgYIKoZIzj0EAwIw
    JDEiMCAGA1UEAwwZUHJlc2VuY2VHYXRld2F5IFRlc3QgQ0EgMjAgFw0yNjExMjQy
    MjUwNDFaGA8yMTI2MTAzMTIyNTA0MVowJDEiMCAGA1UEAwwZUHJlc2VuY2VHYXRl
    d2F5IFRlc3QgQ0EgMjBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABHHc3YUQ0Kco
    GErTuTqXjJvDhpKIyPD/IcxIhMt4gHIm5rlPGysXk7eoVS84eLJWy4uKP8B3xLm3
    OuSMX5ZOSa+jYzBhMB0GA1UdDgQWBBRUBIcc2LHNZH1gB/jIGqzwDjZyljAfBgNV
    HSMEGDAWgBRUBIcc2LHNZH1gB/jIGqzwDjZyljAPBgNVHRMBAf8EBTADAQH/MA4G
    A1UdDwEB/wQEAwIBBjAKBggqhkjOPQQDAgNIADBFAiB8fWSqmPGdHCmgAhFm5tVz
    nGs7dUo7GB8sfvfRRq3EggIhANc2nqH8aikJqBjTJOjVO22pU45VbsP2+CsCNfbW
    2vV1
    -----END CERTIFICATE-----
    """
    public static let edgeCertificate = """
    -----BEGIN CERTIFICATE-----
    MIIB2zCCAYGgAwIBAgIUHg5GUznV0LPu5SqCYFhGriOsEmUwCgYIKoZIzj0EAwIw
    JDEiMCAGA1UEAwwZUHJlc2VuY2VHYXRld2F5IFRlc3QgQ0EgMjAgFw0yNjExMjQy
    MjUwNDJaGA8yMTI2MTAzMTIyNTA0MlowGzEZMBcGA1UEAwwQZWRnZS5jb250b3Nv
    LmNvbTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABBcB2LDy6GWrnXJ241Y69mCC
    OebsBSAS0pH04ZM+y9CYa4Sc4ZftCvAbkgGkU5KsrFJhgc67m3xx43OwzKypd4aj
    gZcwgZQwGwYDVR0RBBQwEoIQZWRnZS5jb250b3NvLmNvbTAJBgNVHRMEAjAAMAsG
    A1UdDwQEAwIHgDAdBgNVHSUEFjAUBggrBgEFBQcDAQYIKwYBBQUHAwIwHQYDVR0O
    BBYEFG6JMiXxLQbgpW+E6/J6lq/Ps80FMB8GA1UdIwQYMBaAFFQEhxzYsc1kfWAH
    +MgarPAONnKWMAoGCCqGSM49BAMCA0gAMEUCIQC2beb9MzGAVwRoTghCp1FJzgsZ
    9NMZ8rxv9No6dwAq8QIgQMJIq7MNsTSJvGFTCdnvBoY09GnDQg6Elu9KZCSHA8w=
    -----END CERTIFICATE-----
    """
    public static let edgeKey = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgOH5WDT73hLB51OA/
    RDL4vD+b5RaJhpxbDm7QfuBj6fyhRANCAAQXAdiw8uhlq51yduNWOvZggjnm7AUg
    EtKR9OGTPsvQmGuEnOGX7QrwG5IBpFOSrKxSYYHOu5t8ceNzsMysqXeG
    -----END PRIVATE KEY-----
    """
    public static let evilCertificate = """
    -----BEGIN CERTIFICATE-----
    MIIB2TCCAX+gAwIBAgIUHg5GUznV0LPu5SqCYFhGriOsEmYwCgYIKoZIzj0EAwIw
    JDEiMCAGA1UEAwwZUHJlc2VuY2VHYXRld2F5IFRlc3QgQ0EgMjAgFw0yNjExMjQy
    MjUwNDJaGA8yMTI2MTAzMTIyNTA0MlowFzEVMBMGA1UEAwwMZXZpbC5leGFtcGxl
    MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEI8kWRicc+Nl4NTWB7gNMF9cqMYAS
    xsi47zTMS2AaNQVOTIXKgExk6qI04STBYzeilj+9LD75O/Lp2aCYuKy9EKOBmTCB
    ljAdBgNVHREEFjAUggxldmlsLmV4YW1wbGWHBH8AAAEwCQYDVR0TBAIwADALBgNV
    HQ8EBAMCB4AwHQYDVR0lBBYwFAYIKwYBBQUHAwEGCCsGAQUFBwMCMB0GA1UdDgQW
    BBROARMNX9thVFJcNza1Rs71eBKHHjAfBgNVHSMEGDAWgBRUBIcc2LHNZH1gB/jI
    GqzwDjZyljAKBggqhkjOPQQDAgNIADBFAiAj6ihrNfjfk1NKmBltljXFsJYLRi8i
    xlNM3izR8VfYbQIhALVdZFCm3ss0CWnPXB7mXSqIm5VNAPxush9dvrqWvX1L
    -----END CERTIFICATE-----
    """
    public static let evilKey = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgqJe4iPh9iS+C5Om3
    GYB8wSPihhUn++5JecARbBhwXxGhRANCAAQjyRZGJxz42Xg1NYHuA0wX1yoxgBLG
    yLjvNMxLYBo1BU5MhcqATGTqojThJMFjN6KWP70sPvk78unZoJi4rL0Q
    -----END PRIVATE KEY-----
    """
    public static let wildcardCertificate = """
    -----BEGIN CERTIFICATE-----
    MIIB1zCCAX2gAwIBAgIUHg5GUznV0LPu5SqCYFhGriOsEmcwCgYIKoZIzj0EAwIw
    JDEiMCAGA1UEAwwZUHJlc2VuY2VHYXRld2F5IFRlc3QgQ0EgMjAgFw0yNjExMjQy
    MjUwNDJaGA8yMTI2MTAzMTIyNTA0MlowGTEXMBUGA1UEAwwOKi5mYWJyaWthbS5j
    b20wWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAS+J+0c8uxN0YMCpXYBNBY7SbeV
    u0Ge6CpM1dNy7D8XB5UOwNK1ie0ERUviXo1D1rTpx4JTXwGKUSwwYAYnskipo4GV
    MIGSMBkGA1UdEQQSMBCCDiouZmFicmlrYW0uY29tMAkGA1UdEwQCMAAwCwYDVR0P
    BAQDAgeAMB0GA1UdJQQWMBQGCCsGAQUFBwMBBggrBgEFBQcDAjAdBgNVHQ4EFgQU
    hqlNYJcS+08s5SP4YAU5UpsPitgwHwYDVR0jBBgwFoAUVASHHNixzWR9YAf4yBqs
    8A42cpYwCgYIKoZIzj0EAwIDSAAwRQIhAIcvZg7huLJUyXBuIuGrJyyziiOrKi9t
    zykFvZv0sHRkAiB/cpclotqujQjWQoKSnxEQlD8f5z9NmD2V6RaI1sYv0A==
    -----END CERTIFICATE-----
    """
    public static let wildcardKey = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg33DdNYGMMxb8+UcU
    3q0a9fZU5FrpwQPvx/uKnJNDNnGhRANCAAS+J+0c8uxN0YMCpXYBNBY7SbeVu0Ge
    6CpM1dNy7D8XB5UOwNK1ie0ERUviXo1D1rTpx4JTXwGKUSwwYAYnskip
    -----END PRIVATE KEY-----
    """
}
