// Samples the memory of the device in use twice a second on a thread of its own: the worker's
// thread is busy inside generate() for a whole response, and the UI thread must not block on a
// driver query. Lives in PerfMonitor's monitor thread; driven by queued start()/stop().
#pragma once

#include <QObject>
#include <QString>
#include <memory>

#include "memoryprobe.h"

class QTimer;

class MemoryMonitor : public QObject {
    Q_OBJECT
public:
    static constexpr int kIntervalMs = 500;

    explicit MemoryMonitor(std::shared_ptr<MemoryProbe> probe, QObject* parent = nullptr);

public slots:
    void start();  // samples now, then every kIntervalMs
    void stop();
    void sampleNow();

signals:
    void sampled(quint64 used, quint64 budget, const QString& source);

private:
    std::shared_ptr<MemoryProbe> m_probe;
    QTimer* m_timer;  // a child, so that it moves to the monitor's thread with it
};
