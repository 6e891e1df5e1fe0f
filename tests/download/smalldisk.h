// A small tmpfs mounted on a test's own folder, to fill a disk for real. Needs root (CI runs
// as root on a fresh machine); mount() says why it could not, and the test then skips. The
// destructor unmounts, whatever the test's outcome.
#pragma once

#include <QDir>
#include <QFile>
#include <QString>

#include <sys/mount.h>
#include <cerrno>
#include <cstring>

class SmallDisk {
public:
    SmallDisk() = default;
    SmallDisk(const SmallDisk&) = delete;
    SmallDisk& operator=(const SmallDisk&) = delete;
    ~SmallDisk() { unmount(); }

    // Mounts a tmpfs of `size` (e.g. "1m") on dir; returns an empty string, or why not.
    QString mount(const QString& dir, const QByteArray& size) {
        const QByteArray path = QFile::encodeName(QDir(dir).absolutePath());
        const QByteArray options = "size=" + size + ",mode=0700";
        if (::mount("tmpfs", path.constData(), "tmpfs", MS_NOSUID | MS_NODEV,
                    options.constData()) != 0)
            return QStringLiteral("cannot mount a tmpfs on %1 (%2); it needs root")
                .arg(dir, QString::fromLocal8Bit(strerror(errno)));
        m_path = path;
        return {};
    }
    // Grows (or shrinks) the mounted tmpfs, keeping its files.
    bool resize(const QByteArray& size) {
        const QByteArray options = "size=" + size + ",mode=0700";
        return !m_path.isEmpty() &&
               ::mount("tmpfs", m_path.constData(), "tmpfs", MS_REMOUNT | MS_NOSUID | MS_NODEV,
                       options.constData()) == 0;
    }
    void unmount() {
        if (!m_path.isEmpty()) ::umount2(m_path.constData(), MNT_DETACH);
        m_path.clear();
    }

private:
    QByteArray m_path;
};
