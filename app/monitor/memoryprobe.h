// Lets the memory monitor's thread read the engine's memory numbers while the worker owns the
// engine: the worker attaches the engine after a load and detaches it before unloading, under
// the lock that a reading holds, so a reading never meets a model being replaced or destroyed.
#pragma once

#include <mutex>
#include <optional>

#include "chatengine.h"

class MemoryProbe {
public:
    void attach(const ChatEngine* engine);
    // Waits for a reading in progress; afterwards none starts until the next attach().
    void detach();
    // Empty while no model is attached.
    std::optional<EngineMemory> read() const;

private:
    mutable std::mutex m_mutex;
    const ChatEngine* m_engine = nullptr;
};
