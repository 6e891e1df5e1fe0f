// Runs a ModelInspector on a thread of its own: reading headers and querying the GPU's memory
// budget take long enough to stutter the UI. Slots are invoked through queued calls only;
// results come back as signals carrying the request's generation, so that the caller can drop
// answers to requests made before the settings changed.
#pragma once

#include <QObject>
#include <QString>
#include <memory>

#include "modelinspector.h"

class ModelInspectorWorker : public QObject {
    Q_OBJECT
public:
    explicit ModelInspectorWorker(std::unique_ptr<ModelInspector> inspector,
                                  QObject* parent = nullptr);
    ~ModelInspectorWorker() override;

public slots:
    // device: "" (the best GPU), a GPU index, or "cpu" (then the RAM is checked).
    void inspectFile(quint64 generation, const QString& path, int contextLength,
                     const QString& device);
    void estimateEntry(quint64 generation, const CatalogEntry& entry, int contextLength,
                       const QString& device);

signals:
    void fileInspected(quint64 generation, const QString& path, const ModelDetails& details,
                       const FitInfo& fit);
    void entryEstimated(quint64 generation, const QString& id, const FitInfo& fit);

private:
    std::unique_ptr<ModelInspector> m_inspector;
};
