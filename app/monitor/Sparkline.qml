import QtQuick
import QtQuick.Controls.Material

// Tokens/s over the last minute: one value per sampling instant, newest at the right; the
// vertical scale follows the largest value shown.
Canvas {
    id: root
    property list<real> values
    property int capacity: 120
    property color lineColor: theme.sparkline
    readonly property real maxValue: values.length ? Math.max.apply(null, values) : 0
    Theme { id: theme; dark: root.Material.theme === Material.Dark }

    implicitHeight: 44
    onValuesChanged: requestPaint()
    onWidthChanged: requestPaint()
    onHeightChanged: requestPaint()

    onPaint: {
        const ctx = getContext("2d")
        ctx.reset()
        // The track: the whole minute, so that a short history reads as recent.
        ctx.fillStyle = theme.trackFaint
        ctx.fillRect(0, 0, width, height)
        ctx.fillStyle = theme.track
        ctx.fillRect(0, height - 1, width, 1)
        const n = values.length
        if (n === 0 || width <= 0) return
        const top = Math.max(maxValue, 1e-6)
        const step = width / Math.max(1, capacity - 1)
        const x0 = width - (n - 1) * step
        const yOf = (v) => height - 1 - (height - 2) * v / top
        ctx.beginPath()
        ctx.moveTo(x0, height)
        for (let i = 0; i < n; ++i) ctx.lineTo(x0 + i * step, yOf(values[i]))
        ctx.lineTo(x0 + (n - 1) * step, height)
        ctx.closePath()
        ctx.fillStyle = theme.alpha(lineColor, 0.25)
        ctx.fill()
        ctx.beginPath()
        for (let j = 0; j < n; ++j) {
            if (j === 0) ctx.moveTo(x0, yOf(values[0]))
            else ctx.lineTo(x0 + j * step, yOf(values[j]))
        }
        ctx.strokeStyle = lineColor
        ctx.lineWidth = 1.5
        ctx.stroke()
    }
}
