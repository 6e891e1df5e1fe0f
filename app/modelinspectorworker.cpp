#include "modelinspectorworker.h"

namespace {

FitInfo cpuChosen() {
    FitInfo f;
    f.verdict = FitInfo::Verdict::CpuOnly;
    f.detail = QObject::tr("CPU only: the device setting is CPU");
    return f;
}

}  // namespace

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
    } else if (device == QLatin1String("cpu")) {
        fit = cpuChosen();
    } else {
        fit = m_inspector->estimateFile(path, contextLength, device);
    }
    emit fileInspected(generation, path, details, fit);
}

void ModelInspectorWorker::estimateEntry(quint64 generation, const QString& id,
                                         const CatalogShape& shape, qint64 weightBytes,
                                         int contextLength, const QString& device) {
    const FitInfo fit = device == QLatin1String("cpu")
                            ? cpuChosen()
                            : m_inspector->estimateShape(shape, weightBytes, contextLength, device);
    emit entryEstimated(generation, id, fit);
}
