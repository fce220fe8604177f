// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "DocFS",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DocumentModel", targets: ["DocumentModel"]),
        // Document-scope shims of Apple's modules, so Apple document sources compile unchanged.
        .library(name: "SwiftUI", targets: ["SwiftUI"]),
        .library(name: "UniformTypeIdentifiers", targets: ["UniformTypeIdentifiers"]),
        .library(name: "Combine", targets: ["Combine"]),
        .library(name: "FUSE", targets: ["FUSE"]),
        .library(name: "DocumentStore", targets: ["DocumentStore"]),
        .library(name: "DocumentFS", targets: ["DocumentFS"]),
        .library(name: "StandardDocuments", targets: ["StandardDocuments"]),
        .library(name: "TypeConfiguration", targets: ["TypeConfiguration"]),
        .library(name: "PostgresDocumentStore", targets: ["PostgresDocumentStore"]),
        .executable(name: "docfs", targets: ["docfs"]),
        .executable(name: "docfs-fuzz", targets: ["DocFSFuzz"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        // Metrics: each module records through swift-metrics' API (a no-op until a backend is
        // bootstrapped); `docfs mount --metrics` bootstraps swift-prometheus and serves its text.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // Linux port of SwiftUI's document API; no FUSE, no store.
        .target(name: "DocumentModel", dependencies: ["SystemSupport", "Combine"]),
        // The Combine surface documents use (publishers, subjects, ObservableObject, @Published).
        .target(name: "Combine"),
        .target(name: "UniformTypeIdentifiers", dependencies: ["DocumentModel"]),
        .target(name: "SwiftUI", dependencies: ["DocumentModel", "Combine", "UniformTypeIdentifiers"]),
        // POSIX file helpers shared by the model, the store, the bridge and the FUSE binding (names as
        // bytes, paths of any length, stat, mmap, copies).
        .target(name: "SystemSupport", dependencies: ["CSystemShims"]),
        // Small C helpers for libc calls Swift cannot import (variadic or GNU-only).
        .target(name: "CSystemShims"),
        .systemLibrary(name: "CFUSE", pkgConfig: "fuse3", providers: [.apt(["libfuse3-dev"])]),
        .target(name: "FUSE", dependencies: ["CFUSE", "SystemSupport", "CSystemShims", .product(name: "CoreMetrics", package: "swift-metrics")]),
        .target(name: "DocumentStore", dependencies: [
            "DocumentModel", "SystemSupport", "CSystemShims", "CCrypto", .product(name: "CoreMetrics", package: "swift-metrics"),
        ]),
        .systemLibrary(name: "CPostgreSQL", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // A store kept in PostgreSQL and shared by several mounts: a local mirror serves the kernel,
        // the database holds the truth, and commits from other mounts arrive by LISTEN/NOTIFY.
        .target(name: "PostgresDocumentStore", dependencies: [
            "DocumentStore", "DocumentModel", "SystemSupport", "CSystemShims", "CPostgreSQL", "CCrypto",
            .product(name: "Logging", package: "swift-log"), .product(name: "CoreMetrics", package: "swift-metrics"),
        ]),
        .target(name: "DocumentFS", dependencies: [
            "FUSE", "DocumentStore", "DocumentModel", "SystemSupport", "CSystemShims",
            .product(name: "Logging", package: "swift-log"), .product(name: "CoreMetrics", package: "swift-metrics"),
        ]),
        .target(
            name: "StandardDocuments", dependencies: [
                "DocumentModel", "SystemSupport", "CSystemShims", .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Yams", package: "Yams"), .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            // The validators are byte loops over whole documents; unoptimized they run 20 times
            // slower, which the integration tests (run by `swift test` against the debug daemon) would
            // feel.
            swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        // The built-in document types under their names, and the configuration file that maps names
        // to them or to external validator commands; shared by the CLI and DocumentLibrary users.
        .target(name: "TypeConfiguration", dependencies: [
            "DocumentFS", "DocumentModel", "StandardDocuments", "SystemSupport", "CSystemShims",
            .product(name: "TOMLKit", package: "TOMLKit"),
        ]),
        .executableTarget(name: "docfs", dependencies: [
            "DocumentFS", "StandardDocuments", "TypeConfiguration", "CSystemShims", "PostgresDocumentStore",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "CoreMetrics", package: "swift-metrics"), .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        // Fuzz targets for everything DocFS reads from bytes anyone can write: run by libFuzzer when
        // built with -sanitize=fuzzer -DFUZZING (scripts/fuzz), else a replayer of found inputs.
        .executableTarget(
            name: "DocFSFuzz", dependencies: ["DocumentModel", "DocumentStore", "PostgresDocumentStore", "StandardDocuments", "TypeConfiguration"]),
        .testTarget(name: "DocumentModelTests", dependencies: ["DocumentModel", "StandardDocuments", "SwiftUI", "UniformTypeIdentifiers"]),
        .testTarget(name: "DocumentStoreTests", dependencies: ["DocumentStore", "DocumentModel", "SystemSupport"]),
        .testTarget(name: "TypeConfigurationTests", dependencies: ["TypeConfiguration", "DocumentFS", "DocumentStore", "StandardDocuments"]),
        // Document types written exactly as for Apple platforms (import SwiftUI, UniformTypeIdentifiers,
        // Combine), with the app's Info.plist as a resource.
        .testTarget(
            name: "AppleSourceTests", dependencies: ["SwiftUI", "UniformTypeIdentifiers", "Combine", "DocumentFS", "DocumentStore"],
            resources: [.copy("Resources")]),
        .testTarget(
            name: "DocFSIntegrationTests",
            dependencies: ["CSystemShims", "DocumentFS", "DocumentModel", "DocumentStore", "PostgresDocumentStore", "StandardDocuments", "TypeConfiguration"]),
    ],
    swiftLanguageModes: [.v6]
)
