#include "modelinspectorworker.h"

ModelInspectorWorker::ModelInspectorWorker(std::unique_ptr<ModelInspector> inspector,
                                           QObject* parent)
    : QObject(parent), m_inspector(std::move(inspector)) {}

ModelInspectorWorker::~ModelInspectorWorker() = default;

void ModelInspectorWorker::inspectFile(quint64 generation, const QString& path, int contextLength,
                                       const QString& device) {
    const ModelDetails details = m_inspector->inspect(path);
    FitInfo fit;
    if (!details.error.isEmpty()) {
        fit.detail = details.error;  // stays Unknown: there is nothing to estimate
    } else {
        fit = m_inspector->estimateFile(path, contextLength, device);
    }
    emit fileInspected(generation, path, details, fit);
}

void ModelInspectorWorker::estimateEntry(quint64 generation, const CatalogEntry& entry,
                                         int contextLength, const QString& device) {
    emit entryEstimated(generation, entry.id,
                        m_inspector->estimateEntry(entry, contextLength, device));
}
