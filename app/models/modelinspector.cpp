#include "modelinspector.h"

#include <QObject>

#include "downloader.h"

QString FitInfo::verdictName() const {
    switch (verdict) {
        case Verdict::FitsGpu:
            return QStringLiteral("gpu");
        case Verdict::DoesNotFit:
            return QStringLiteral("nofit");
        case Verdict::CpuOnly:
            return QStringLiteral("cpu");
        case Verdict::NoMemory:
            return QStringLiteral("nomem");
        case Verdict::Unknown:
            break;
    }
    return {};
}

QString FitInfo::label() const {
    switch (verdict) {
        case Verdict::FitsGpu:
            return QObject::tr("fits on GPU");
        case Verdict::DoesNotFit:
            if (gpuLayers > 0 && gpuLayers < nLayers)
                return QObject::tr("partly fits: %1 of %2 layers on the GPU")
                    .arg(gpuLayers)
                    .arg(nLayers);
            return QObject::tr("does not fit: needs %1, %2 free")
                .arg(Downloader::formatBytes(needed), Downloader::formatBytes(available));
        case Verdict::CpuOnly:
            return QObject::tr("CPU only");
        case Verdict::NoMemory:
            return QObject::tr("does not fit in memory: needs %1, %2 free")
                .arg(Downloader::formatBytes(needed), Downloader::formatBytes(available));
        case Verdict::Unknown:
            break;
    }
    return detail.isEmpty() ? QObject::tr("estimating…") : QObject::tr("no estimate");
}
