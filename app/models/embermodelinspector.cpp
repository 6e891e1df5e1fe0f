#include "embermodelinspector.h"

#include <QStringList>
#include <algorithm>

#include "catalog.h"
#include "ember/ember.h"
#include "emberchatengine.h"

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

FitInfo toFitInfo(const ember::FitEstimate& e) {
    FitInfo f;
    switch (e.verdict) {
        case ember::FitEstimate::Verdict::FitsGpu:
            f.verdict = FitInfo::Verdict::FitsGpu;
            break;
        case ember::FitEstimate::Verdict::DoesNotFit:
            f.verdict = FitInfo::Verdict::DoesNotFit;
            break;
        case ember::FitEstimate::Verdict::CpuOnly:
            f.verdict = FitInfo::Verdict::CpuOnly;
            break;
        case ember::FitEstimate::Verdict::NoMemory:
            f.verdict = FitInfo::Verdict::NoMemory;
            break;
    }
    f.needed = qint64(e.total);
    f.available = qint64(e.available);
    f.device = qs(e.device);
    f.detail = qs(e.message);
    f.noGpu = e.no_gpu;
    f.cpuReason = qs(e.cpu_reason);
    f.gpuLayers = int(e.gpu_layers);
    f.nLayers = int(e.n_layers);
    return f;
}

// No estimate: the reason goes to the detail, the verdict stays Unknown.
FitInfo noEstimate(const ember::Error& error) {
    FitInfo f;
    f.detail = QObject::tr("no estimate: %1").arg(qs(error.message));
    return f;
}

}  // namespace

ModelDetails EmberModelInspector::inspect(const QString& path) {
    ModelDetails d;
    // The engine describes the file (its quantization label by its own rule: the 2-D weights);
    // only the presentation is the app's.
    auto inspected = ember::inspect(path.toStdString());
    if (!inspected) {
        d.error = qs(inspected.error().message);
        d.errorSummary = qs(EmberChatEngine::plainProblem(path.toStdString(), inspected.error()));
        return d;
    }
    const ember::ModelInfo& info = *inspected;
    d.fileSize = qint64(info.file_size);
    d.architecture = qs(info.architecture);
    d.name = qs(info.name);
    d.contextLength = int(info.n_ctx_train);
    d.parameters = qint64(info.n_params);
    d.quantization = qs(info.quantization);

    // Every type by its share of the bytes, largest first; types the engine does not compute with.
    const std::vector<std::string> supported = ember::supported_tensor_types();
    auto mix = info.bytes_per_type;
    std::sort(mix.begin(), mix.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    QStringList parts, unsupportedTypes;
    for (const auto& [type, bytes] : mix) {
        const double share =
            info.weight_bytes ? 100.0 * double(bytes) / double(info.weight_bytes) : 0;
        parts << QStringLiteral("%1 %2%").arg(qs(type)).arg(
            share < 1 ? QStringLiteral("<1") : QString::number(qRound(share)));
        if (std::find(supported.begin(), supported.end(), type) == supported.end())
            unsupportedTypes << qs(type);
    }
    d.quantizationMix = parts.join(QStringLiteral(" · "));

    if (!Catalog::architectureSupported(d.architecture))
        d.problem = QObject::tr("architecture %1 is not supported yet").arg(d.architecture);
    else if (!unsupportedTypes.isEmpty())
        d.problem = QObject::tr("tensor type %1 is not supported yet")
                        .arg(unsupportedTypes.join(QStringLiteral(", ")));
    return d;
}

ember::FitLimits EmberModelInspector::limits() const {
    ember::FitLimits l = m_limits;
    l.gpu_mem_reserve = std::max<uint64_t>(l.gpu_mem_reserve, m_reserve.load());
    return l;
}

FitInfo EmberModelInspector::estimateFile(const QString& path, int contextLength,
                                          const QString& device) {
    auto est =
        ember::estimate_fit(path.toStdString(), contextLength, device.toStdString(), limits());
    return est ? toFitInfo(*est) : noEstimate(est.error());
}

FitInfo EmberModelInspector::estimateEntry(const CatalogEntry& entry, int contextLength,
                                           const QString& device) {
    ember::ModelShape s;
    s.arch = entry.architecture.toStdString();
    s.n_layer = entry.shape.nLayer;
    s.n_embd = entry.shape.nEmbd;
    s.n_head = entry.shape.nHead;
    s.n_head_kv = entry.shape.nHeadKv;
    s.n_ff = entry.shape.nFf;
    s.n_vocab = entry.shape.nVocab;
    s.head_dim = entry.shape.headDim;
    s.tied = entry.shape.tied;
    s.sliding_window = entry.shape.slidingWindow;
    s.n_ctx_train = uint32_t(std::max(entry.contextLength, 0));
    s.file_type = entry.quantization.toStdString();
    auto est = ember::estimate_fit(s, contextLength, device.toStdString(), limits());
    return est ? toFitInfo(*est) : noEstimate(est.error());
}
