// Hashes a finished download on a worker thread, so that a multi-GB file never blocks the UI,
// then checks its contents (the GGUF header) there too.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>

// A checksum a download is expected to match.
struct ExpectedChecksum {
    enum class Algorithm { None, Sha256, Md5 };
    Algorithm algorithm = Algorithm::None;
    QString hex;  // lower case

    bool isSet() const { return algorithm != Algorithm::None; }
    QString algorithmName() const;
    // Checks the hex length and digits; returns an empty checksum and sets *error when invalid.
    static ExpectedChecksum parse(const QString& algorithm, const QString& hex, QString* error);
};

// Checks a complete file's contents; returns what is wrong with it, or an empty string. Runs on
// the verifier's worker thread, so it must not touch objects of other threads.
using ContentCheck = std::function<QString(const QString& path)>;

class ChecksumVerifier : public QObject {
    Q_OBJECT
public:
    explicit ChecksumVerifier(QObject* parent = nullptr);
    ~ChecksumVerifier() override;  // cancels and joins the worker

    // Starts hashing path (when expected is set), then runs check (when given and the digest
    // matched); finished() comes later on this object's thread.
    void start(const QString& path, const ExpectedChecksum& expected,
               const ContentCheck& check = {});
    void cancel();
    bool isRunning() const { return m_thread.joinable() && !m_done; }

signals:
    // matches: the digest equals the expected one (true when none was expected). error: set when
    // the file could not be read. problem: what the content check found wrong, else empty.
    void finished(bool matches, const QString& actualHex, const QString& error,
                  const QString& problem);

private:
    void join();

    std::thread m_thread;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    quint64 m_generation = 0;
    bool m_done = true;
};
