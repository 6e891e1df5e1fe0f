import QtQuick
import QtQuick.Controls
import Ember

// Shows or hides the performance overlay (also Ctrl+Shift+P); the choice is a setting, so it
// is remembered across runs.
ToolButton {
    id: root
    property Settings settings

    objectName: "perfOverlayButton"
    text: "▁▃▆"
    font.family: "DejaVu Sans Mono"
    // Not checkable: a click would break the binding that follows the setting.
    checked: settings ? settings.perfOverlay : false
    onClicked: settings.perfOverlay = !settings.perfOverlay
    ToolTip.visible: hovered
    ToolTip.delay: 600
    ToolTip.text: qsTr("Performance overlay (Ctrl+Shift+P)")

    Shortcut {
        sequence: "Ctrl+Shift+P"
        context: Qt.ApplicationShortcut
        onActivated: root.settings.perfOverlay = !root.settings.perfOverlay
    }
}
