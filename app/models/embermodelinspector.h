// ModelInspector over the engine: the GGUF reader for header details, ember::estimate_fit for
// the fit estimates. Stateless but for the GPU reserve (atomic), so any thread may call it.
#pragma once

#include <atomic>

#include "ember/ember.h"
#include "modelinspector.h"

class EmberModelInspector : public ModelInspector {
public:
    // limits: the memory to assume instead of measuring it (tests); zeros measure.
    explicit EmberModelInspector(const ember::FitLimits& limits = {}) : m_limits(limits) {}
    ModelDetails inspect(const QString& path) override;
    FitInfo estimateFile(const QString& path, int contextLength, const QString& device) override;
    FitInfo estimateEntry(const CatalogEntry& entry, int contextLength,
                          const QString& device) override;
    void setGpuReserve(quint64 bytes) override { m_reserve = bytes; }

private:
    ember::FitLimits limits() const;
    ember::FitLimits m_limits;
    std::atomic<quint64> m_reserve{0};
};
