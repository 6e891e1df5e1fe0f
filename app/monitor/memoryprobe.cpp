#include "memoryprobe.h"

void MemoryProbe::attach(const ChatEngine* engine) {
    std::lock_guard lock(m_mutex);
    m_engine = engine;
}

void MemoryProbe::detach() {
    std::lock_guard lock(m_mutex);
    m_engine = nullptr;
}

std::optional<EngineMemory> MemoryProbe::read() const {
    std::lock_guard lock(m_mutex);
    if (!m_engine) return std::nullopt;
    return m_engine->memory();
}
