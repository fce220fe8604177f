import CoreMetrics

/// Parser helpers that crashed or ran past their time limit, by format
/// (`docfs_helper_crashes_total{format="toml"}`): each refused the document it was checking.
enum HelperMetrics {
    static func crashed(_ format: String) { Counter(label: "docfs_helper_crashes_total", dimensions: [("format", format)]).increment() }
    static func timedOut(_ format: String) { Counter(label: "docfs_helper_timeouts_total", dimensions: [("format", format)]).increment() }
}
