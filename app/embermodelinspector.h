// ModelInspector over the engine: the GGUF reader for header details, ember::estimate_fit for
// the fit estimates. Stateless, so any thread may call it.
#pragma once

#include "modelinspector.h"

class EmberModelInspector : public ModelInspector {
public:
    ModelDetails inspect(const QString& path) override;
    FitInfo estimateFile(const QString& path, int contextLength, const QString& device) override;
    FitInfo estimateShape(const CatalogShape& shape, qint64 weightBytes, int contextLength,
                          const QString& device) override;
};
