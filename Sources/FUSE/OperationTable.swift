import CFUSE
import Glibc
import SystemSupport

/// The C callback table. Each callback finds the file system through the session's userdata, calls
/// it, and turns its result into exactly one reply. Built in a nonisolated function of its own file
/// so no closure is inferred main-actor-isolated (see FUSE-NOTES: such closures crash off the main thread).
nonisolated func makeOperationTable() -> fuse_lowlevel_ops {
    var table = fuse_lowlevel_ops()

    table.`init` = { userdata, connection in
        guard let userdata, let connection else { return }
        OperationsBox.from(userdata).negotiate(connection)
    }
    table.destroy = { userdata in
        guard let userdata else { return }
        OperationsBox.from(userdata).operations.destroy()
    }
    table.lookup = { request, parent, name in
        RequestMetrics.time(.lookup) {
            guard let request, let name else { return }
            let context = Request(request)
            context.replyEntry { () throws(FUSEError) in
                if let relative = relativeEntry(name) {
                    return try context.operations.lookup(relative, in: parent, context: context.caller)
                }
                return try context.operations.lookup(parent: parent, name: fileName(name), context: context.caller)
            }
        }
    }
    table.forget = { request, inode, count in
        RequestMetrics.time(.forget) {
            guard let request else { return }
            let context = Request(request)
            context.operations.forget(inode: inode, count: count)
            fuse_reply_none(request)
        }
    }
    table.forget_multi = { request, count, items in
        RequestMetrics.time(.forgetMulti) {
            guard let request else { return }
            let context = Request(request)
            if let items {
                for index in 0..<count {
                    context.operations.forget(inode: items[index].ino, count: items[index].nlookup)
                }
            }
            fuse_reply_none(request)
        }
    }
    table.getattr = { request, inode, info in
        RequestMetrics.time(.getattr) {
            guard let request else { return }
            let context = Request(request)
            let handle = info.map { docfs_fi_fh($0) }
            context.replyAttributes { () throws(FUSEError) in
                try context.operations.getAttributes(inode: inode, handle: handle, context: context.caller)
            }
        }
    }
    table.setattr = { request, inode, attributes, toSet, info in
        RequestMetrics.time(.setattr) {
            guard let request, let attributes else { return }
            let context = Request(request)
            let changes = AttributeChanges(attributes.pointee, toSet: toSet)
            let handle = info.map { docfs_fi_fh($0) }
            context.replyAttributes { () throws(FUSEError) in
                try context.operations.setAttributes(inode: inode, changes: changes, handle: handle, context: context.caller)
            }
        }
    }
    table.readlink = { request, inode in
        RequestMetrics.time(.readlink) {
            guard let request else { return }
            let context = Request(request)
            do throws(FUSEError) {
                let target = try context.operations.readLink(inode: inode)
                FileSystemPath.withCString(target) { _ = fuse_reply_readlink(request, $0) }
            } catch {
                context.replyError(error)
            }
        }
    }
    table.mknod = { request, parent, name, mode, device in
        RequestMetrics.time(.mknod) {
            guard let request, let name else { return }
            let context = Request(request)
            context.replyEntry { () throws(FUSEError) in
                try context.operations.makeNode(parent: parent, name: fileName(name), mode: mode, device: device, context: context.caller)
            }
        }
    }
    table.mkdir = { request, parent, name, mode in
        RequestMetrics.time(.mkdir) {
            guard let request, let name else { return }
            let context = Request(request)
            context.replyEntry { () throws(FUSEError) in
                try context.operations.makeDirectory(parent: parent, name: fileName(name), mode: mode, context: context.caller)
            }
        }
    }
    table.unlink = { request, parent, name in
        RequestMetrics.time(.unlink) {
            guard let request, let name else { return }
            let context = Request(request)
            context.replyStatus { () throws(FUSEError) in
                try context.operations.unlink(parent: parent, name: fileName(name), context: context.caller)
            }
        }
    }
    table.rmdir = { request, parent, name in
        RequestMetrics.time(.rmdir) {
            guard let request, let name else { return }
            let context = Request(request)
            context.replyStatus { () throws(FUSEError) in
                try context.operations.removeDirectory(parent: parent, name: fileName(name), context: context.caller)
            }
        }
    }
    table.symlink = { request, target, parent, name in
        RequestMetrics.time(.symlink) {
            guard let request, let target, let name else { return }
            let context = Request(request)
            context.replyEntry { () throws(FUSEError) in
                try context.operations.symlink(target: FileSystemPath.string(fromCString: target), parent: parent, name: fileName(name), context: context.caller)
            }
        }
    }
    table.rename = { request, parent, name, newParent, newName, flags in
        RequestMetrics.time(.rename) {
            guard let request, let name, let newName else { return }
            let context = Request(request)
            context.replyStatus { () throws(FUSEError) in
                try context.operations.rename(
                    parent: parent, name: fileName(name), newParent: newParent, newName: fileName(newName),
                    flags: UInt32(flags), context: context.caller)
            }
        }
    }
    table.link = { request, inode, newParent, newName in
        RequestMetrics.time(.link) {
            guard let request, let newName else { return }
            let context = Request(request)
            context.replyEntry { () throws(FUSEError) in
                try context.operations.link(inode: inode, newParent: newParent, newName: fileName(newName), context: context.caller)
            }
        }
    }
    table.open = { request, inode, info in
        RequestMetrics.time(.open) {
            guard let request, let info else { return }
            let context = Request(request)
            do throws(FUSEError) {
                let reply = try context.operations.open(inode: inode, flags: docfs_fi_flags(info), context: context.caller)
                reply.apply(to: info)
                if fuse_reply_open(request, info) == -ENOENT {
                    // The opener was interrupted; release what the open made.
                    context.operations.release(inode: inode, handle: reply.handle, flags: docfs_fi_flags(info))
                }
            } catch {
                context.replyError(error)
            }
        }
    }
    table.create = { request, parent, name, mode, info in
        RequestMetrics.time(.create) {
            guard let request, let name, let info else { return }
            let context = Request(request)
            do throws(FUSEError) {
                let (entry, reply) = try context.operations.create(
                    parent: parent, name: fileName(name), mode: mode, flags: docfs_fi_flags(info), context: context.caller)
                reply.apply(to: info)
                var parameters = entry.parameters
                if fuse_reply_create(request, &parameters, info) == -ENOENT {
                    context.operations.release(inode: entry.inode, handle: reply.handle, flags: docfs_fi_flags(info))
                    context.operations.forget(inode: entry.inode, count: 1)
                }
            } catch {
                context.replyError(error)
            }
        }
    }
    table.read = { request, inode, size, offset, info in
        RequestMetrics.time(.read) {
            guard let request, let info else { return }
            let context = Request(request)
            do throws(FUSEError) {
                switch try context.operations.read(inode: inode, handle: docfs_fi_fh(info), offset: Int64(offset), size: size) {
                case .bytes(let bytes):
                    bytes.withUnsafeBufferPointer { buffer in
                        _ = fuse_reply_buf(request, buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, buffer.count)
                    }
                case .fileRegion(let descriptor, let regionOffset, let regionSize, let owner):
                    withExtendedLifetime(owner) {
                        _ = docfs_reply_fd(request, descriptor, off_t(regionOffset), regionSize)
                    }
                }
            } catch {
                context.replyError(error)
            }
        }
    }
    table.write = { request, inode, bytes, size, offset, info in
        RequestMetrics.time(.write) {
            guard let request, let info else { return }
            let context = Request(request)
            do throws(FUSEError) {
                let buffer = UnsafeRawBufferPointer(start: bytes, count: size)
                let written = try context.operations.write(
                    inode: inode, handle: docfs_fi_fh(info), bytes: buffer, offset: Int64(offset), context: context.caller)
                fuse_reply_write(request, written)
            } catch {
                context.replyError(error)
            }
        }
    }
    table.flush = { request, inode, info in
        RequestMetrics.time(.flush) {
            guard let request, let info else { return }
            let context = Request(request)
            context.replyStatus { () throws(FUSEError) in
                try context.operations.flush(inode: inode, handle: docfs_fi_fh(info), context: context.caller)
            }
        }
    }
    table.release = { request, inode, info in
        RequestMetrics.time(.release) {
            guard let request, let info else { return }
            let context = Request(request)
            context.operations.release(inode: inode, handle: docfs_fi_fh(info), flags: docfs_fi_flags(info))
            fuse_reply_err(request, 0)
        }
    }
    table.fsync = { request, inode, dataOnly, info in
        RequestMetrics.time(.fsync) {
            guard let request, let info else { return }
            let context = Request(request)
            context.replyStatus { () throws(FUSEError) in
                try context.operations.fsync(inode: inode, handle: docfs_fi_fh(info), dataOnly: dataOnly != 0)
            }
        }
    }
    table.fallocate = { request, inode, mode, offset, length, info in
        RequestMetrics.time(.fallocate) {
            guard let request, let info else { return }
            let context = Request(request)
            context.replyStatus { () throws(FUSEError) in
                try context.operations.allocate(
                    inode: inode, handle: docfs_fi_fh(info), mode: mode, offset: Int64(offset), length: Int64(length), context: context.caller)
            }
        }
    }
    table.opendir = { request, inode, info in
        RequestMetrics.time(.opendir) {
            guard let request, let info else { return }
            let context = Request(request)
            do throws(FUSEError) {
                let reply = try context.operations.openDirectory(inode: inode, flags: docfs_fi_flags(info), context: context.caller)
                reply.apply(to: info)
                if fuse_reply_open(request, info) == -ENOENT {
                    context.operations.releaseDirectory(inode: inode, handle: reply.handle)
                }
            } catch {
                context.replyError(error)
            }
        }
    }
    table.readdir = { request, inode, size, offset, info in
        RequestMetrics.time(.readdir) {
            guard let request, let info else { return }
            Request(request).replyDirectory(inode: inode, handle: docfs_fi_fh(info), size: size, offset: Int64(offset), plus: false)
        }
    }
    table.readdirplus = { request, inode, size, offset, info in
        RequestMetrics.time(.readdirplus) {
            guard let request, let info else { return }
            Request(request).replyDirectory(inode: inode, handle: docfs_fi_fh(info), size: size, offset: Int64(offset), plus: true)
        }
    }
    table.releasedir = { request, inode, info in
        RequestMetrics.time(.releasedir) {
            guard let request, let info else { return }
            let context = Request(request)
            context.operations.releaseDirectory(inode: inode, handle: docfs_fi_fh(info))
            fuse_reply_err(request, 0)
        }
    }
    table.fsyncdir = { request, inode, dataOnly, info in
        RequestMetrics.time(.fsyncdir) {
            guard let request, let info else { return }
            let context = Request(request)
            context.replyStatus { () throws(FUSEError) in
                try context.operations.fsyncDirectory(inode: inode, handle: docfs_fi_fh(info), dataOnly: dataOnly != 0)
            }
        }
    }
    table.statfs = { request, inode in
        RequestMetrics.time(.statfs) {
            guard let request else { return }
            let context = Request(request)
            do throws(FUSEError) {
                var statistics = try context.operations.statistics(inode: inode)
                fuse_reply_statfs(request, &statistics)
            } catch {
                context.replyError(error)
            }
        }
    }
    table.access = { request, inode, mask in
        RequestMetrics.time(.access) {
            guard let request else { return }
            let context = Request(request)
            context.replyStatus { () throws(FUSEError) in
                try context.operations.access(inode: inode, mask: mask, context: context.caller)
            }
        }
    }
    table.setxattr = { request, inode, name, value, size, flags in
        RequestMetrics.time(.setxattr) {
            guard let request, let name else { return }
            let context = Request(request)
            context.replyStatus { () throws(FUSEError) in
                try context.operations.setExtendedAttribute(
                    inode: inode, name: FileSystemPath.string(fromCString: name), value: UnsafeRawBufferPointer(start: value, count: size),
                    flags: flags, context: context.caller)
            }
        }
    }
    table.getxattr = { request, inode, name, size in
        RequestMetrics.time(.getxattr) {
            guard let request, let name else { return }
            let context = Request(request)
            context.replySized(size) { () throws(FUSEError) in
                try context.operations.extendedAttribute(inode: inode, name: FileSystemPath.string(fromCString: name), context: context.caller)
            }
        }
    }
    table.listxattr = { request, inode, size in
        RequestMetrics.time(.listxattr) {
            guard let request else { return }
            let context = Request(request)
            context.replySized(size) { () throws(FUSEError) in
                try context.operations.extendedAttributeNames(inode: inode, context: context.caller)
            }
        }
    }
    table.removexattr = { request, inode, name in
        RequestMetrics.time(.removexattr) {
            guard let request, let name else { return }
            let context = Request(request)
            context.replyStatus { () throws(FUSEError) in
                try context.operations.removeExtendedAttribute(inode: inode, name: FileSystemPath.string(fromCString: name), context: context.caller)
            }
        }
    }
    return table
}

/// `.` or `..`, which LOOKUP may ask for; nil for any other name.
private func relativeEntry(_ name: UnsafePointer<CChar>) -> RelativeEntry? {
    let dot = CChar(UInt8(ascii: "."))
    guard name[0] == dot else { return nil }
    if name[1] == 0 { return .current }
    return name[1] == dot && name[2] == 0 ? .parent : nil
}

/// A name from the kernel, checked: EINVAL or ENAMETOOLONG fails the request when it is not one.
private func fileName(_ name: UnsafePointer<CChar>) throws(FUSEError) -> FileName {
    do {
        return try FileName(bytes: UnsafeRawBufferPointer(start: name, count: strlen(name)))
    } catch {
        throw FUSEError(error.errno)
    }
}
