import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// Under a message: `< 2/3 >` to switch between its versions (regenerated answers, edited
// messages), and a reply's details in small print: model, tokens, speed, time to first token.
RowLayout {
    id: root
    property int version: 1
    property int versions: 1
    property bool busy: false
    property string model
    property int tokens: 0
    property real tokensPerSecond: 0
    property real ttftMs: 0
    property int fontSize: 14
    signal switchVersion(int step)

    readonly property string details: {
        const parts = []
        if (model.length > 0) parts.push(model)
        if (tokens > 0) parts.push(tokens === 1 ? qsTr("1 token") : qsTr("%1 tokens").arg(tokens))
        if (tokensPerSecond > 0) parts.push(qsTr("%1 tok/s").arg(tokensPerSecond.toFixed(1)))
        if (ttftMs > 0) parts.push(qsTr("%1 s to first token").arg((ttftMs / 1000).toFixed(2)))
        return parts.join(" · ")
    }
    visible: versions > 1 || details.length > 0
    spacing: 2

    ToolButton {
        objectName: "previousVersionButton"
        visible: root.versions > 1
        enabled: !root.busy && root.version > 1
        text: "<"
        font.pixelSize: root.fontSize - 2
        implicitWidth: 28
        onClicked: root.switchVersion(-1)
    }
    Label {
        objectName: "versionLabel"
        visible: root.versions > 1
        text: root.version + "/" + root.versions
        font.pixelSize: root.fontSize - 2
        color: Material.hintTextColor
    }
    ToolButton {
        objectName: "nextVersionButton"
        visible: root.versions > 1
        enabled: !root.busy && root.version < root.versions
        text: ">"
        font.pixelSize: root.fontSize - 2
        implicitWidth: 28
        onClicked: root.switchVersion(1)
    }
    Label {
        objectName: "detailsLabel"
        visible: text.length > 0
        text: root.details
        font.pixelSize: root.fontSize - 3
        color: Material.hintTextColor
        Layout.leftMargin: root.versions > 1 ? 8 : 0
    }
}
