#include "memorymonitor.h"

#include <QTimer>

MemoryMonitor::MemoryMonitor(std::shared_ptr<MemoryProbe> probe, QObject* parent)
    : QObject(parent), m_probe(std::move(probe)), m_timer(new QTimer(this)) {
    m_timer->setInterval(kIntervalMs);
    connect(m_timer, &QTimer::timeout, this, &MemoryMonitor::sampleNow);
}

void MemoryMonitor::start() {
    sampleNow();
    m_timer->start();
}

void MemoryMonitor::stop() {
    m_timer->stop();
}

void MemoryMonitor::sampleNow() {
    // No model (not yet attached, or unloaded meanwhile): nothing to report.
    if (!m_probe) return;
    const auto memory = m_probe->read();
    if (!memory) return;
    emit sampled(memory->used, memory->budget, QString::fromStdString(memory->source));
}
