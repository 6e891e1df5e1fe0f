import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material

// A model's fit estimate as a coloured pill: fits on GPU, does not fit, CPU only.
Rectangle {
    id: root
    property string verdict   // "gpu", "nofit", "cpu", "nomem", "" (still estimating)
    property string text
    property string detail    // the engine's full message, as a tooltip

    readonly property bool dark: Material.theme === Material.Dark
    Theme { id: theme; dark: root.Material.theme === Material.Dark }
    readonly property color tint: verdict === "gpu" ? theme.success
                                : verdict === "nofit" || verdict === "nomem" ? theme.failure
                                : verdict === "cpu" ? theme.neutral : theme.unknown

    visible: text.length > 0
    implicitWidth: label.implicitWidth + 16
    implicitHeight: label.implicitHeight + 6
    radius: height / 2
    color: theme.alpha(tint, dark ? 0.28 : 0.12)
    border.color: theme.alpha(tint, 0.45)

    Label {
        id: label
        anchors.centerIn: parent
        readonly property bool bad: root.verdict === "nofit" || root.verdict === "nomem"
        text: (root.verdict === "gpu" ? "✓ " : bad ? "✕ " : "") + root.text
        color: root.dark ? Qt.lighter(root.tint, 1.6) : root.tint
        font.pixelSize: 12
        font.bold: root.verdict === "gpu" || bad
    }

    HoverHandler { id: hover }
    ToolTip.visible: hover.hovered && root.detail.length > 0
    ToolTip.text: root.detail
}
